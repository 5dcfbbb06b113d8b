import { buildApp } from './app.ts';
import { startChannel } from './channel/index.ts';
import { tokenSigner } from './platform/auth.ts';
import { systemClock } from './platform/clock.ts';
import { loadConfig } from './platform/config.ts';
import { createPool } from './platform/db.ts';

// Signs nothing: the document does not depend on secrets, which must still be 32 bytes long.
const EXPORT_SECRET = 'openapi-export-not-a-secret-000000000';

/**
 * The document `GET /docs/json` serves, without a database: the pool is created but never used
 * (pg connects lazily), so `npm run lint` and the client generator need nothing running.
 */
export async function serviceDocument(): Promise<Record<string, unknown>> {
  const db = createPool('postgres://127.0.0.1:1/none', 1);
  const config = { ...loadConfig({}), logLevel: 'silent' };
  const app = await buildApp({
    db,
    clock: systemClock,
    config,
    signer: tokenSigner(EXPORT_SECRET),
    notifySecret: EXPORT_SECRET,
    eventsSecret: EXPORT_SECRET,
    channelUrl: 'http://127.0.0.1:1',
    notifyUrl: '',
  });
  try {
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
    await db.end();
  }
}

/** The provider double's document (its `/docs/json`), control API included. */
export async function channelDocument(): Promise<Record<string, unknown>> {
  const channel = await startChannel({ notifySecret: EXPORT_SECRET, control: true });
  try {
    return (await (await fetch(`${channel.url}/docs/json`)).json()) as Record<string, unknown>;
  } finally {
    await channel.close();
  }
}
