import { loadConfig } from '../platform/config.ts';
import { parseArgs, refuseUnknownFlags } from '../platform/args.ts';
import { migrate } from '../platform/migrate.ts';
import { openDatabase } from '../runtime.ts';

/** `flashpay migrate`: applies pending migrations and exits. */
export async function migrateCommand(argv: string[] = []): Promise<void> {
  refuseUnknownFlags('migrate', parseArgs(argv), []);
  const database = await openDatabase(loadConfig(), (line) => process.stderr.write(`${line}\n`));
  try {
    const applied = await migrate(database.url);
    process.stdout.write(applied.length ? `applied migrations ${applied.join(', ')}\n` : 'nothing to apply\n');
  } finally {
    await database.embedded?.stop();
  }
}
