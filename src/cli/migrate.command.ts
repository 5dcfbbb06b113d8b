import { loadConfig } from '../platform/config.ts';
import { parseCommand } from '../platform/args.ts';
import { MIGRATE } from './specs/index.ts';
import { migrate } from '../platform/migrate.ts';
import { openDatabase } from '../runtime.ts';

/** `flashpay migrate`: applies pending migrations and exits. */
export async function migrateCommand(argv: string[] = []): Promise<void> {
  parseCommand(MIGRATE, argv);
  const config = loadConfig();
  const database = await openDatabase(config, (line) => process.stderr.write(`${line}\n`));
  try {
    // Behind PgBouncer, on the direct URL: the migration lock is a session advisory lock.
    const applied = await migrate(config.directDatabaseUrl ?? database.url);
    process.stdout.write(applied.length ? `applied migrations ${applied.join(', ')}\n` : 'nothing to apply\n');
  } finally {
    await database.embedded?.stop();
  }
}
