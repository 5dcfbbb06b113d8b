import type { AppDeps } from '../app.deps.ts';
import { skuRoutes } from '../stock/index.ts';
import { tokenSigner } from '../platform/auth.ts';
import { intFlag, parseCommand, stringFlag, usageError } from '../platform/args.ts';
import { INVENTORY, STOCK } from './specs/index.ts';
import type { CommandSpec } from '../platform/args.ts';
import { systemClock } from '../platform/clock.ts';
import { loadConfig, tokenOptions } from '../platform/config.ts';
import { createPool } from '../platform/db.ts';
import { buildHttp } from '../platform/http.ts';
import { migrate } from '../platform/migrate.ts';
import { loadSecrets } from '../platform/secrets.ts';
import { stockPumpFor, stockServiceRoles } from '../orders/index.ts';
import { ensureDatabase, startEmbedded, type EmbeddedCluster } from '../platform/embedded.ts';
import path from 'node:path';
import { stockRoutes } from '../orders/index.ts';
import { every } from '../workers.ts';

// The applier holds one connection per batch; the admin routes a few more.
const INVENTORY_POOL_SIZE = 6;
// The embedded cluster's database when the stock service runs apart with no URL given.
const STOCK_DB = 'flashpay_stock';
const log = (line: string) => process.stderr.write(`flashpay inventory: ${line}\n`);

/**
 * `flashpay inventory`: the stock service as its own process. It applies the stock requests in
 * batches (one applier per database at a time, an advisory lock) and serves the SKU admin routes
 * and the operator's stock routes on its own port. The shops then run with
 * FLASHPAY_STOCK_SERVICE=external and only relay requests and results.
 */
export const stockCommand = (argv: string[]) => serveStock(STOCK, argv);
export const inventoryCommand = (argv: string[]) => serveStock(INVENTORY, argv);

// One service under two names (the contract's `inventory`, the code's `stock`): each its own help.
async function serveStock(spec: CommandSpec, argv: string[]): Promise<void> {
  const args = parseCommand(spec, argv);
  const config = loadConfig();
  const apart = config.stockService === 'separate';
  // Shared (FLASHPAY_STOCK_SERVICE=external): the shops' database, whose reservations their decider
  // locks. Separate: a database of its own (the flag, FLASHPAY_STOCK_DATABASE_URL, or its own
  // embedded cluster) — never DATABASE_URL, which names the shops'.
  let embedded: EmbeddedCluster | undefined;
  let url = stringFlag(args, 'database-url') ?? (apart ? config.stockDatabaseUrl : config.databaseUrl);
  if (!url && apart) {
    embedded = await startEmbedded({
      dataDir: path.join(config.dataDir, 'stock-pg'),
      persistent: true,
      log: (line) => {
        if (/FATAL|PANIC/.test(line)) log(line.trim());
      },
      notice: log,
      supervise: true,
      onGiveUp: () => process.exit(1),
    });
    await ensureDatabase(embedded.url('postgres'), STOCK_DB);
    url = embedded.url(STOCK_DB);
  }
  if (!url)
    throw usageError(
      spec,
      `needs --database-url or DATABASE_URL (the shops' database), or FLASHPAY_STOCK_SERVICE=separate`,
    );
  await migrate(url);
  const db = createPool(url, INVENTORY_POOL_SIZE);
  const secrets = await loadSecrets(config);
  const deps: AppDeps = {
    db,
    clock: systemClock,
    config,
    signer: tokenSigner(secrets.jwt, tokenOptions(config)),
    notifySecret: secrets.notify,
    eventsSecret: secrets.events,
    channelUrl: '',
    notifyUrl: '',
  };
  const app = buildHttp({
    bodyLimitBytes: config.bodyLimitBytes,
    logLevel: config.logLevel,
    rateLimitPerMinute: config.rateLimitPerMinute,
  });
  app.get('/healthz', { schema: { hide: true } }, async () => ({ ok: true }));
  skuRoutes(app, deps);
  stockRoutes(app, deps);
  await app.listen({ host: stringFlag(args, 'host') ?? config.host, port: intFlag(args, 'port', 8082) });
  const address = app.server.address();
  const api = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const pump = stockPumpFor(deps, (error) => log((error as Error).message), stockServiceRoles(config));
  const loop = every('stock', config.stockIntervalMs, () => pump.drain(), log);
  process.stdout.write(`${JSON.stringify({ inventory: api, stock: api })}\n`);

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await loop.stop();
    await pump.close();
    await app.close();
    await db.end();
    await embedded?.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}
