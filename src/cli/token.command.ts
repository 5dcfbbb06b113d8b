import { loadSecret, MAX_TOKEN_TTL_S, tokenSigner } from '../platform/auth.ts';
import { loadConfig, tokenOptions } from '../platform/config.ts';
import { intFlag, parseArgs, refuseUnknownFlags, stringFlag, UsageError } from '../platform/args.ts';

/** `flashpay token --tenant T --user U [--admin | --operator] [--ttl 3600]` prints a bearer token. */
export async function tokenCommand(argv: string[]): Promise<void> {
  const args = parseArgs(argv, ['admin', 'operator']);
  refuseUnknownFlags('token', args, ['tenant', 'user', 'admin', 'operator', 'ttl']);
  const tenantId = stringFlag(args, 'tenant');
  const userId = stringFlag(args, 'user');
  if (!tenantId || !userId)
    throw new UsageError('usage: flashpay token --tenant T --user U [--admin | --operator] [--ttl 3600]');
  const config = loadConfig();
  const { secret } = await loadSecret(config.jwtSecret, config.dataDir, 'jwt');
  const ttl = intFlag(args, 'ttl', 3600);
  if (ttl < 1 || ttl > MAX_TOKEN_TTL_S)
    throw new UsageError(`--ttl must be 1..${MAX_TOKEN_TTL_S} seconds (a token without a near expiry is refused)`);
  const scope = args.flags.has('operator') ? 'operator' : args.flags.has('admin') ? 'admin' : 'buyer';
  const token = await tokenSigner(secret, tokenOptions(config)).sign({ tenantId, userId, scope }, ttl);
  process.stdout.write(`${token}\n`);
}
