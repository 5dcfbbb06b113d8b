import { parseCommand, stringFlag, usageError, UsageError } from '../platform/args.ts';
import { TRIGGER, TRIGGERS, type Trigger } from './specs/index.ts';
import { act } from './trigger.act.ts';
import { actOnOwnOrder, statusOf, type OwnOrder } from './trigger.own.ts';
import { targetOf, type Target } from './trigger.target.ts';

export { TRIGGERS, type Trigger } from './specs/index.ts';

async function run(what: Trigger, orderId: string | undefined, t: Target) {
  if (orderId !== undefined) return { orderId, own: undefined, provider: await act(what, orderId, t) };
  const own: OwnOrder = await actOnOwnOrder(what, t);
  return { orderId: own.orderId, own, provider: own.provider };
}

function humanLines(what: Trigger, done: Awaited<ReturnType<typeof run>>, tenant: string, status: string): string {
  const made = done.own
    ? `made order ${done.orderId} to act on (SKU ${done.own.sku}, buyer ${done.own.buyer}, tenant ${tenant})\n`
    : '';
  const paid = done.own?.payAnswer ? `; its pay answered ${done.own.payAnswer}` : '';
  return `${made}${what} ${done.orderId}: ${TRIGGERS[what]}\n${done.orderId} is ${status} now${paid}\n`;
}

/** `flashpay trigger WHAT [--order ID] [--tenant acme] [--api URL --channel URL] [--json]` */
export async function triggerCommand(argv: string[]): Promise<void> {
  const args = parseCommand(TRIGGER, argv);
  const what = args.positional[0] ?? '';
  if (!(what in TRIGGERS)) throw usageError(TRIGGER, `unknown kind "${what}"`);
  const kind = what as Trigger;
  const orderId = stringFlag(args, 'order');
  try {
    const target = await targetOf(args);
    const done = await run(kind, orderId, target);
    const status = await statusOf(target, done.orderId);
    const line = args.flags.has('json')
      ? `${JSON.stringify({
          trigger: kind,
          order_id: done.orderId,
          made: done.own ? { sku: done.own.sku, buyer: done.own.buyer, tenant: target.tenant } : null,
          what: TRIGGERS[kind],
          ...(done.own?.payAnswer ? { pay_answered: done.own.payAnswer } : {}),
          status,
          provider: done.provider,
        })}\n`
      : humanLines(kind, done, target.tenant, status);
    process.stdout.write(line);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    // A refusal of the API or the channel (no such order, no control API, a wrong token): one line.
    process.stderr.write(`flashpay trigger: ${(error as Error).message}\n`);
    process.exitCode = 1;
  }
}
