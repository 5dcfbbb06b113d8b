import { loadSecret, tokenSigner } from '../platform/auth.ts';
import { loadConfig, notifyUrlFor, tokenOptions } from '../platform/config.ts';
import { payTimeoutOf, type ProviderConfig } from '../platform/provider.config.ts';
import { stringFlag, UsageError, type Args } from '../platform/args.ts';
import { readRuntime } from '../runtime.ts';

// The stack `flashpay trigger` acts on, and its one way of calling it.

export interface Target {
  /** Signs the buyer token of the order trigger makes of its own. */
  buyerToken(user: string): Promise<string>;
  api: string;
  channel: string;
  adminToken: string;
  controlToken: string | undefined;
  payTimeoutMs: number;
  notifyUrl: string;
  tenant: string;
  providers: ProviderConfig;
}

export async function call(
  url: string,
  options: { method?: string; token?: string; body?: unknown; idempotencyKey?: string } = {},
) {
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(url, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const body: any = text ? JSON.parse(text) : undefined;
  if (!response.ok) throw new Error(`${url} answered ${response.status}: ${text.slice(0, 300)}`);
  return body;
}

export async function targetOf(args: Args): Promise<Target> {
  const config = loadConfig();
  const running = await readRuntime(config);
  const api = stringFlag(args, 'api') ?? running?.api;
  const channel = stringFlag(args, 'channel') ?? config.channelUrl ?? running?.channel;
  if (!api || !channel)
    throw new UsageError('no stack: run `flashpay start --control` in this directory, or pass --api URL --channel URL');
  const signer = tokenSigner((await loadSecret(config.jwtSecret, config.dataDir, 'jwt')).secret, tokenOptions(config));
  // The order is read in its tenant (the README walkthrough's `acme` unless --tenant says otherwise).
  const tenant = stringFlag(args, 'tenant') ?? 'acme';
  return {
    api,
    channel,
    tenant,
    providers: config.providers,
    adminToken: await signer.sign({ tenantId: tenant, userId: 'trigger', scope: 'admin' }),
    buyerToken: (user) => signer.sign({ tenantId: tenant, userId: user, scope: 'buyer' }),
    controlToken: config.controlToken,
    // The stack's provider's timeout: a reply later than it is lost.
    payTimeoutMs: payTimeoutOf(config, config.providers.provider),
    notifyUrl: notifyUrlFor(config, api),
  };
}
