import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helpOf, parseCommand, UsageError, type CommandSpec } from '../../src/platform/args.ts';
import { SPECS, SUBCOMMANDS } from '../../src/cli/specs/index.ts';
import { BIN } from '../support/process.ts';

// Issue 52: `--help` said less than the usage error (`sim --help` without --scenario, `bench
// --help` without --only, `cluster up --help` one line). Now each command has one spec that its
// parser, its --help and its usage error are all made from. These tests walk every command and
// subcommand: its help names every flag the parser accepts, a description, the environment and an
// example; asking for it exits 0 and touches nothing; an unknown flag exits 2 with the same text.

const ROOT = path.resolve(import.meta.dirname, '../..');
const every: Array<{ argv: string[]; spec: CommandSpec }> = [
  ...Object.entries(SPECS).map(([name, spec]) => ({ argv: [name], spec })),
  ...Object.entries(SUBCOMMANDS).flatMap(([name, subs]) =>
    Object.entries(subs).map(([sub, spec]) => ({ argv: [name, sub], spec })),
  ),
];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('every command’s help from one spec (HS, issue 52)', () => {
  let listener: net.Server;
  let connections = 0;
  let dataDir = '';
  let env: NodeJS.ProcessEnv = {};

  beforeAll(async () => {
    // Any command that tried to act anyway connects here, and is counted.
    listener = net.createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const target = `127.0.0.1:${(listener.address() as net.AddressInfo).port}`;
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-hs-'));
    env = {
      ...process.env,
      DATABASE_URL: `postgres://flashpay:x@${target}/flashpay`,
      FLASHPAY_CHANNEL_URL: `http://${target}`,
      FLASHPAY_STOCK_DATABASE_URL: `postgres://flashpay:x@${target}/stock`,
      FLASHPAY_DATA_DIR: dataDir,
      FLASHPAY_PORT: '0',
    };
  });
  afterAll(async () => {
    await new Promise((resolve) => listener.close(resolve));
    await rm(dataDir, { recursive: true, force: true });
  });

  const run = (args: string[]) =>
    new Promise<Run>((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], { cwd: dataDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.once('error', reject);
      // A command that started something anyway is stopped, and fails below on its exit code.
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });

  it('HS-01: each spec names every flag with a description, the environment it reads and an example', () => {
    for (const { spec } of every) {
      const help = helpOf(spec);
      expect(help.startsWith(`usage: flashpay ${spec.name}`), spec.name).toBe(true);
      expect(spec.examples.length, spec.name).toBeGreaterThan(0);
      for (const example of spec.examples) expect(example, spec.name).toMatch(/(^|\s)flashpay /);
      for (const flag of spec.flags) {
        expect(flag.description.length, `${spec.name} --${flag.name}`).toBeGreaterThan(5);
        expect(help, spec.name).toContain(`  --${flag.name}${flag.value ? ` ${flag.value}` : ''} `);
      }
      for (const variable of spec.env) expect(help, spec.name).toContain(`  ${variable.name}`);
    }
    // The ones issue 52 named, by name.
    const flagsOf = (spec: CommandSpec | undefined) => spec?.flags.map((f) => f.name) ?? [];
    expect(flagsOf(SPECS.sim)).toEqual(expect.arrayContaining(['scenario', 'lines', 'wallet-share', 'async']));
    expect(flagsOf(SPECS.bench)).toContain('only');
    expect(flagsOf(SUBCOMMANDS.cluster?.up)).toEqual(expect.arrayContaining(['api', 'nats', 'port-base', 'dir']));
    expect(SPECS.listen?.env.map((e) => e.name)).toContain('FLASHPAY_EVENTS_SECRET');
  });

  it('HS-02: the parser accepts exactly the flags its help lists, and every command parses through its spec', async () => {
    for (const { spec } of every) {
      const positional = Array.from({ length: spec.positional?.min ?? 0 }, () => 'x');
      for (const flag of spec.flags)
        expect(() => parseCommand(spec, [...positional, `--${flag.name}`, ...(flag.value ? ['1'] : [])])).not.toThrow();
      expect(() => parseCommand(spec, [...positional, '--not-in-the-help'])).toThrow(UsageError);
    }
    // The other half: no command parses its argv around its spec (a flag the help would not show).
    const dir = path.join(ROOT, 'src/cli');
    const files = (await readdir(dir)).filter((f) => f.endsWith('.command.ts'));
    expect(files.length).toBeGreaterThanOrEqual(Object.keys(SPECS).length - 2); // stock = inventory; bench in bench/
    for (const file of files) {
      const source = await readFile(path.join(dir, file), 'utf8');
      expect([file, /\bparseArgs\(|refuseUnknownFlags\(/.test(source)]).toEqual([file, false]);
    }
    // Every command main.ts loads has a spec, and every spec a command.
    const main = await readFile(path.join(dir, 'main.ts'), 'utf8');
    const loaded = [...main.matchAll(/^ {2}([a-z]+): async \(\) =>/gm)].map((m) => m[1]);
    expect(loaded.sort()).toEqual(Object.keys(SPECS).sort());
    const bench = await readFile(path.join(ROOT, 'bench/options.ts'), 'utf8');
    expect(bench).toMatch(/parseCommand\(BENCH, argv\)/);
  });

  it('HS-03: --help of every command and subcommand prints its spec’s text, exits 0 and starts nothing; an unknown flag exits 2 with the same text', async () => {
    const asks = every.flatMap(({ argv, spec }) => [
      { argv: [...argv, '--help'], spec, help: true },
      // A command with subcommands answers an unknown one (`cluster frob`) with its overview.
      argv.length === 1 && argv[0]! in SUBCOMMANDS
        ? { argv: [...argv, 'frob'], spec, help: false }
        : { argv: [...argv, ...(spec.positional?.min ? ['x'] : []), '--no-such-flag'], spec, help: false },
    ]);
    const runs: Array<Run & { argv: string[]; spec: CommandSpec; help: boolean }> = [];
    // Four at a time: each is a Node process on a shared machine.
    for (let i = 0; i < asks.length; i += 4)
      runs.push(...(await Promise.all(asks.slice(i, i + 4).map(async (a) => ({ ...a, ...(await run(a.argv)) })))));
    for (const r of runs) {
      const text = helpOf(r.spec);
      if (r.help) expect([r.argv, r.code, r.stdout, r.stderr]).toEqual([r.argv, 0, text, '']);
      else {
        expect([r.argv, r.code, r.stdout]).toEqual([r.argv, 2, '']);
        const why = r.argv.at(-1) === 'frob' ? '.*"frob".*' : 'unexpected --no-such-flag';
        expect(r.stderr).toMatch(new RegExp(`^flashpay ${r.spec.name}: ${why}\n\n`));
        expect(r.stderr.endsWith(`\n\n${text}`), r.argv.join(' ')).toBe(true);
      }
    }
    expect(connections).toBe(0);
    expect(await readdir(dataDir)).toEqual([]);
  }, 300_000);
});
