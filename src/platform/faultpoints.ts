// The one registry of named fault points (after DBOS's debugpoint). Inert unless armed:
// - across processes, by starting one with FLASHPAY_FAULTPOINT=<name>: the point announces itself
//   on stdout ("STAGE <name>") and never returns, so a test can `kill -9` it at exactly that place;
// - in process, by a test calling armFaultPoint(name, hook): the hook runs there (pause, count).
// Production wiring never arms one.
const armed = process.env.FLASHPAY_FAULTPOINT;

export const FAULT_POINTS = [
  'charged.before-commit',
  'pay.after-charge',
  'relay.after-deliver-before-mark',
  'wallet-pay.after-commit',
  'saga.after-fulfil-call',
  'saga.after-refund-call',
  'saga.between-undos',
  'stock.batch.before-commit',
  'create.batch.before-commit',
  'recovery.after-claim',
] as const;
export type FaultPointName = (typeof FAULT_POINTS)[number];

type Hook = (detail: Readonly<Record<string, unknown>>) => Promise<void>;
const hooks = new Map<FaultPointName, Hook>();

/** Arms `name` in this process; returns the disarm. */
export function armFaultPoint(name: FaultPointName, hook: Hook): () => void {
  hooks.set(name, hook);
  return () => {
    if (hooks.get(name) === hook) hooks.delete(name);
  };
}

export async function faultPoint(name: FaultPointName, detail: Readonly<Record<string, unknown>> = {}): Promise<void> {
  await hooks.get(name)?.(detail);
  if (armed !== name) return;
  process.stdout.write(`STAGE ${name}\n`);
  await new Promise<never>(() => undefined);
}
