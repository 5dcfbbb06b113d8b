import { assertSecretStrength, loadSecret } from './auth.ts';
import type { Config } from './config.ts';

/** The process's secrets: each protects one thing, none doubles for another (docs/security.md). */
export interface Secrets {
  /** Bearer tokens (FLASHPAY_JWT_SECRET). */
  jwt: string;
  /** Provider → service payment notifications, shared with the provider (FLASHPAY_NOTIFY_SECRET). */
  notify: string;
  /** Relay → fulfilment webhook deliveries, never leaves this service (FLASHPAY_EVENTS_SECRET). */
  events: string;
  /** Names of the ones generated for development under the data directory. */
  generated: string[];
}

const SOURCES = [
  ['jwt', 'FLASHPAY_JWT_SECRET', 'jwtSecret'],
  ['notify', 'FLASHPAY_NOTIFY_SECRET', 'notifySecret'],
  ['events', 'FLASHPAY_EVENTS_SECRET', 'eventsSecret'],
] as const;

/**
 * Each secret from its variable or, for development, generated once per installation (32 random
 * bytes, mode 0600 under the data directory). Every one must be at least 32 bytes, and no two may
 * be equal: a provider that knows its notification secret must not be able to forge our events or
 * our tokens. In production none may be a generated one.
 */
export async function loadSecrets(config: Config): Promise<Secrets> {
  const values: Record<string, string> = {};
  const generated: string[] = [];
  for (const [name, variable, key] of SOURCES) {
    const loaded = await loadSecret(config[key], config.dataDir, name);
    assertSecretStrength(variable, loaded.secret);
    if (loaded.generated) {
      if (config.production) throw new Error(`${variable} must be set in production (development secrets are refused)`);
      generated.push(variable);
    }
    values[name] = loaded.secret;
  }
  if (config.controlToken !== undefined) assertSecretStrength('FLASHPAY_CONTROL_TOKEN', config.controlToken);
  if (config.metricsToken !== undefined) assertSecretStrength('FLASHPAY_METRICS_TOKEN', config.metricsToken);
  const distinct = new Set(Object.values(values));
  if (distinct.size !== SOURCES.length)
    throw new Error('FLASHPAY_JWT_SECRET, FLASHPAY_NOTIFY_SECRET and FLASHPAY_EVENTS_SECRET must all differ');
  return { jwt: values.jwt ?? '', notify: values.notify ?? '', events: values.events ?? '', generated };
}
