import { it } from 'vitest';

/**
 * A test that needs a real broker: runs when `NATS_URL` / `AMQP_URL` is set; otherwise it is
 * skipped with "skipped: no broker", except under FLASHPAY_REQUIRE_BROKERS=1, where it FAILS.
 */
export function brokerTest(
  name: string,
  envName: 'NATS_URL' | 'AMQP_URL',
  body: (url: string) => Promise<void>,
  timeoutMs = 30_000,
): void {
  const url = process.env[envName];
  if (url) it(name, () => body(url), timeoutMs);
  else if (process.env.FLASHPAY_REQUIRE_BROKERS === '1')
    it(name, () => {
      throw new Error(`FLASHPAY_REQUIRE_BROKERS=1 but ${envName} is not set`);
    });
  else it.skip(`${name} — skipped: no broker (${envName} not set)`, () => undefined);
}
