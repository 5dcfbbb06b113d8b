import { loadSecret, MAX_TOKEN_TTL_S, tokenSigner } from '../platform/auth.ts';
import { loadConfig, tokenOptions } from '../platform/config.ts';
import { readRuntime } from '../runtime.ts';
import { intFlag, parseCommand, stringFlag, usageError, UsageError } from '../platform/args.ts';
import { TOKEN } from './specs/index.ts';

// A console sign-in link is for one shift of attention, not a day: 15 minutes unless --ttl says.
const CONSOLE_TTL_S = 900;

/**
 * `flashpay token --tenant T --user U [--admin | --operator] [--ttl 3600]` prints a bearer token;
 * with `--console`, an admin (or operator) sign-in link to the operations console instead, the
 * token in the URL's fragment (`/ops#token=…`: a browser never sends a fragment to a server).
 */
export async function tokenCommand(argv: string[]): Promise<void> {
  const args = parseCommand(TOKEN, argv);
  const tenantId = stringFlag(args, 'tenant');
  const userId = stringFlag(args, 'user');
  if (!tenantId || !userId) throw usageError(TOKEN, 'a token needs --tenant and --user');
  const forConsole = args.flags.has('console');
  const config = loadConfig();
  const { secret } = await loadSecret(config.jwtSecret, config.dataDir, 'jwt');
  const ttl = intFlag(args, 'ttl', forConsole ? CONSOLE_TTL_S : 3600);
  if (ttl < 1 || ttl > MAX_TOKEN_TTL_S)
    throw new UsageError(`--ttl must be 1..${MAX_TOKEN_TTL_S} seconds (a token without a near expiry is refused)`);
  // The console needs an admin token at least: --console alone means --admin.
  const scope = args.flags.has('operator') ? 'operator' : args.flags.has('admin') || forConsole ? 'admin' : 'buyer';
  const token = await tokenSigner(secret, tokenOptions(config)).sign({ tenantId, userId, scope }, ttl);
  if (!forConsole) {
    process.stdout.write(`${token}\n`);
    return;
  }
  // The running stack's own address (runtime.json), so `start --port 9090` gets a link to :9090.
  const running = stringFlag(args, 'url') ?? config.publicUrl ?? (await readRuntime(config))?.api;
  const base = (running ?? `http://127.0.0.1:${config.port}`).replace(/\/+$/, '');
  process.stdout.write(`${base}/ops#token=${token}\n`);
}
