import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadSecret, tokenSigner, type TokenSigner } from '../platform/auth.ts';
import { loadConfig, tokenOptions } from '../platform/config.ts';
import { longestPayTimeoutMs } from '../platform/provider.config.ts';
import {
  parseMix,
  planSim,
  runSeed002,
  SEED_SHAPE,
  Simulation,
  type Progress,
  type SimShape,
  type SimTarget,
} from '../sim/index.ts';
import { launchStack } from '../stack.ts';
import { intFlag, parseCommand, stringFlag, usageError, UsageError, type Args } from '../platform/args.ts';
import { SIM } from './specs/index.ts';

function progressBar(p: Progress): void {
  const width = 30;
  const filled = p.total === 0 ? width : Math.round((p.done / p.total) * width);
  process.stderr.write(
    `\r${p.phase.padEnd(11)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${p.done}/${p.total}   ${p.phase === 'done' ? '\n' : ''}`,
  );
}

// Orders of at most 20 lines (the contract's limit).
const MAX_SIM_LINES = 20;

function shareFlag(text: string | undefined): number {
  if (text === undefined) return 0;
  const share = Number(text);
  if (!Number.isFinite(share) || share < 0 || share > 1)
    throw new UsageError(`--wallet-share takes a number from 0 to 1; got "${text}"`);
  return share;
}

function shapeFrom(args: Args): SimShape {
  return {
    orders: intFlag(args, 'orders', SEED_SHAPE.orders),
    stock: intFlag(args, 'stock', SEED_SHAPE.stock),
    lateBuyers: intFlag(args, 'late', SEED_SHAPE.lateBuyers),
    concurrency: intFlag(args, 'concurrency', SEED_SHAPE.concurrency),
    mix: parseMix(stringFlag(args, 'mix') ?? '', SEED_SHAPE.mix),
    refundTimeouts: intFlag(args, 'refund-timeouts', SEED_SHAPE.refundTimeouts),
    lines: intFlag(args, 'lines', 1),
    walletShare: shareFlag(stringFlag(args, 'wallet-share')),
    queued: args.flags.has('async'),
  };
}

function targetOf(api: string, channel: string, signer: TokenSigner, tenantId: string): Promise<SimTarget> {
  // Operator scope: the sim drains the outbox, which acts across tenants.
  return signer.sign({ tenantId, userId: 'sim-operator', scope: 'operator' }).then((adminToken) => ({
    api,
    channel,
    adminToken,
    controlToken: process.env.FLASHPAY_CONTROL_TOKEN || undefined,
    buyerToken: (user: string) => signer.sign({ tenantId, userId: user, scope: 'buyer' }),
  }));
}

/** `flashpay sim --seed N`: seed 000's C29-13 as a product feature; exit 0 only on a clean reconciliation. */
export async function simCommand(argv: string[]): Promise<void> {
  const args = parseCommand(SIM, argv);
  const scenario = stringFlag(args, 'scenario');
  if (scenario !== undefined && scenario !== 'seed-002') throw usageError(SIM, `unknown scenario ${scenario}`);
  const seedText = scenario ? '2' : stringFlag(args, 'seed');
  if (seedText === undefined || !/^\d+$/.test(seedText))
    throw usageError(SIM, 'which seed? --seed N (or --scenario seed-002)');
  const seed = Number(seedText);
  const shape = shapeFrom(args);
  if ((shape.lines ?? 1) < 1 || (shape.lines ?? 1) > MAX_SIM_LINES)
    throw new UsageError(`--lines takes 1..${MAX_SIM_LINES}`);
  const plan = planSim(seed, shape);
  // The README walkthrough's tenant, so a sim beside it shows up in the same storefront and console.
  const tenant = stringFlag(args, 'tenant') ?? 'acme';
  const sku = `sim-${seed}-${randomBytes(3).toString('hex')}`;
  const quiet = args.flags.has('json') || !process.stderr.isTTY;
  const api = stringFlag(args, 'api');

  let cleanup = async () => undefined as void;
  let target: SimTarget;
  if (api) {
    const channel = stringFlag(args, 'channel');
    if (!channel) throw new UsageError('--api needs --channel (the channel must run with --control)');
    const config = loadConfig();
    target = await targetOf(
      api,
      channel,
      tokenSigner((await loadSecret(config.jwtSecret, config.dataDir, 'jwt')).secret, tokenOptions(config)),
      tenant,
    );
  } else {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-sim-'));
    await chmod(dir, 0o755);
    const loaded = loadConfig({ ...process.env, FLASHPAY_DATA_DIR: dir });
    const config = {
      ...loaded,
      recoveryIntervalMs: 500,
      // Eager, but never below the longest pay timeout: a younger PAYING order may still be in its call.
      staleAfterMs: Math.max(2_000, longestPayTimeoutMs(loaded) + 1_000),
      relayIntervalMs: 100,
      logLevel: 'silent',
      channelUrl: undefined,
    };
    // Seed 002 drives every step itself (recovery runs on its command): no background loop races it.
    const stack = await launchStack({
      config,
      port: 0,
      channelPort: 0,
      control: true,
      workers: scenario === undefined,
      advertise: false,
      log: (line) => process.stderr.write(`sim: ${line}\n`),
    });
    target = await targetOf(stack.api, stack.channel, stack.signer, tenant);
    cleanup = async () => {
      await stack.stop();
      await rm(dir, { recursive: true, force: true });
    };
  }
  try {
    if (scenario) {
      const report = await runSeed002(target, tenant, sku);
      process.stdout.write(
        args.flags.has('json') ? `${JSON.stringify(report, null, 2)}\n` : `${report.lines.join('\n')}\n`,
      );
      process.exitCode = report.ok ? 0 : 1;
      return;
    }
    const scope = api ? 'own' : 'all';
    const report = await new Simulation(target, plan, shape, sku, quiet ? undefined : progressBar, scope).run();
    process.stdout.write(
      args.flags.has('json') ? `${JSON.stringify({ ...report, plan }, null, 2)}\n` : `${report.lines.join('\n')}\n`,
    );
    if (!args.flags.has('json'))
      for (const m of report.reconciliation.mismatches)
        process.stdout.write(`mismatch ${m.order_id} ${m.status ?? '-'} ${m.class} ${m.detail}\n`);
    process.exitCode = report.ok ? 0 : 1;
  } finally {
    await cleanup();
  }
}
