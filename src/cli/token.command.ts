import { loadSecret, tokenSigner } from '../platform/auth.ts';
import { loadConfig } from '../platform/config.ts';
import { intFlag, parseArgs, stringFlag, UsageError } from '../platform/args.ts';

/** `flashpay token --tenant T --user U [--admin] [--ttl 3600]` prints a bearer token. */
export async function tokenCommand(argv: string[]): Promise<void> {
  const args = parseArgs(argv, ['admin']);
  const tenantId = stringFlag(args, 'tenant');
  const userId = stringFlag(args, 'user');
  if (!tenantId || !userId) throw new UsageError('usage: flashpay token --tenant T --user U [--admin] [--ttl 3600]');
  const config = loadConfig();
  const { secret } = await loadSecret(config.jwtSecret, config.dataDir, 'jwt');
  const token = await tokenSigner(secret).sign({ tenantId, userId, scope: args.flags.has('admin') ? 'admin' : 'buyer' }, intFlag(args, 'ttl', 3600));
  process.stdout.write(`${token}\n`);
}
