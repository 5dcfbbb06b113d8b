// Named fault points for crash experiments (after DBOS's debugpoint): inert unless the process was
// started with FLASHPAY_FAULTPOINT=<name>. When armed, the point announces itself on stdout
// ("STAGE <name>") and never returns, so a test can `kill -9` the process at exactly that place.
const armed = process.env.FLASHPAY_FAULTPOINT;

export const FAULT_POINTS = ['charged.before-commit', 'pay.after-charge'] as const;
export type FaultPointName = (typeof FAULT_POINTS)[number];

export async function faultPoint(name: FaultPointName): Promise<void> {
  if (armed !== name) return;
  process.stdout.write(`STAGE ${name}\n`);
  await new Promise<never>(() => undefined);
}
