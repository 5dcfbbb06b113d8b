import type { CommandSpec } from '../../platform/args.ts';
import { CLUSTER, CLUSTER_SUBCOMMANDS } from './cluster.ts';
import { BENCH, LISTEN, SIM, TRIGGER } from './dev.ts';
import { EMBEDDED, EMBEDDED_LIST, EMBEDDED_PRUNE, MIGRATE, RECONCILE, RECOVER, TOKEN } from './ops.ts';
import { CHANNEL, DOUBLE, INVENTORY, START, STOCK } from './stack.ts';

export { CLUSTER, CLUSTER_SUBCOMMANDS } from './cluster.ts';
export { BENCH, LISTEN, SIM, TRIGGER, TRIGGERS, type Trigger } from './dev.ts';
export { EMBEDDED, EMBEDDED_LIST, EMBEDDED_PRUNE, MIGRATE, RECONCILE, RECOVER, TOKEN } from './ops.ts';
export { CHANNEL, DOUBLE, INVENTORY, START, STOCK } from './stack.ts';

/**
 * Every command's spec, in the order `flashpay --help` lists them. Light on purpose: `--help`
 * answers from here without loading the command (which might connect or migrate).
 */
export const SPECS: Record<string, CommandSpec> = {
  start: START,
  channel: CHANNEL,
  double: DOUBLE,
  stock: STOCK,
  inventory: INVENTORY,
  token: TOKEN,
  migrate: MIGRATE,
  reconcile: RECONCILE,
  recover: RECOVER,
  sim: SIM,
  bench: BENCH,
  cluster: CLUSTER,
  embedded: EMBEDDED,
  listen: LISTEN,
  trigger: TRIGGER,
};

/** A command's subcommands that have a spec (and a help) of their own. */
export const SUBCOMMANDS: Record<string, Record<string, CommandSpec>> = {
  cluster: CLUSTER_SUBCOMMANDS,
  embedded: { list: EMBEDDED_LIST, prune: EMBEDDED_PRUNE },
};

/** The spec `flashpay NAME [SUB] --help` answers with. */
export function specOf(name: string, rest: readonly string[]): CommandSpec | undefined {
  const sub = rest.find((arg) => !arg.startsWith('-'));
  return (sub !== undefined ? SUBCOMMANDS[name]?.[sub] : undefined) ?? SPECS[name];
}
