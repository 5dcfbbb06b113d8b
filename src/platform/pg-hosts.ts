// libpq's multi-host connection URLs, which neither node-postgres nor pg-connection-string (nor
// WHATWG `new URL()`) accept: `postgres://user:pw@h1:5432,[::1]:5433/db?target_session_attrs=read-write`.
// Parsed here into a list of hosts plus everything else, and formatted back, one host at a time,
// into the single-host URL pg understands. Connecting to the right host is pg-primary.ts.

/** libpq's values that can name a writable primary; `any` is the first host that answers. */
export const SESSION_ATTRS = ['any', 'read-write', 'primary'] as const;
export type SessionAttrs = (typeof SESSION_ATTRS)[number];

export interface PgHost {
  host: string;
  port: number;
}

export interface PgUrl {
  scheme: 'postgres' | 'postgresql';
  user: string | undefined;
  password: string | undefined;
  hosts: PgHost[];
  /** Decoded; empty when the URL names none (pg then uses the user's name, as libpq does). */
  database: string;
  /** The URL's own `target_session_attrs`; undefined when it has none (libpq's default is `any`). */
  sessionAttrs: SessionAttrs | undefined;
  /** Every other query parameter (sslmode, application_name, options…), passed through to pg as given. */
  params: URLSearchParams;
}

export const DEFAULT_PORT = 5432;
const PREFIX = /^(postgres(?:ql)?):\/\//i;

/** True for a URL this module handles; anything else (a `socket:` URL, a bare path) is left to pg. */
export function isPgUrl(url: string): boolean {
  return PREFIX.test(url);
}

function decode(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new Error(`DATABASE_URL: malformed percent-encoding in the ${what}`);
  }
}

function parseHost(text: string): PgHost {
  // `[v6]:port`, `[v6]`, `name:port`, `name`; an IPv6 address is only recognised in brackets, as in libpq.
  const match = /^(?:\[([^\]]+)\]|([^:[\]]*))(?::(\d*))?$/.exec(text);
  if (!match) throw new Error(`DATABASE_URL: cannot read host "${text}" (IPv6 addresses go in brackets)`);
  const host = decode(match[1] ?? match[2] ?? '', 'host');
  if (host === '') throw new Error('DATABASE_URL: an empty host in the host list');
  const portText = match[3];
  const port = portText === undefined || portText === '' ? DEFAULT_PORT : Number(portText);
  if (!Number.isInteger(port) || port < 1 || port > 65_535)
    throw new Error(`DATABASE_URL: port "${portText}" of ${host} is not a TCP port`);
  return { host, port };
}

function sessionAttrsOf(value: string | null): SessionAttrs | undefined {
  if (value === null) return undefined;
  if ((SESSION_ATTRS as readonly string[]).includes(value)) return value as SessionAttrs;
  // read-only, standby, prefer-standby: flashpay writes, so only a primary will do.
  throw new Error(`DATABASE_URL: target_session_attrs must be one of ${SESSION_ATTRS.join(', ')} (was "${value}")`);
}

/** Reads a `postgres://` URL with one or several hosts; throws, naming what is wrong, on anything else. */
export function parsePgUrl(url: string): PgUrl {
  const scheme = PREFIX.exec(url)?.[1]?.toLowerCase() as PgUrl['scheme'] | undefined;
  if (!scheme) throw new Error('DATABASE_URL must start with postgres:// or postgresql://');
  let rest = url.slice(scheme.length + 3);
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  const queryAt = rest.indexOf('?');
  const query = queryAt >= 0 ? rest.slice(queryAt + 1) : '';
  if (queryAt >= 0) rest = rest.slice(0, queryAt);
  const slash = rest.indexOf('/');
  const authority = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? rest.slice(slash + 1) : '';

  // The last '@' ends the user info: a password may hold a raw '@', a host never does.
  const at = authority.lastIndexOf('@');
  const userInfo = at >= 0 ? authority.slice(0, at) : undefined;
  const colon = userInfo?.indexOf(':') ?? -1;
  const user = userInfo === undefined ? undefined : decode(colon >= 0 ? userInfo.slice(0, colon) : userInfo, 'user');
  const password = userInfo !== undefined && colon >= 0 ? decode(userInfo.slice(colon + 1), 'password') : undefined;
  const hostList = authority.slice(at + 1);
  const hosts = hostList === '' ? [] : hostList.split(',').map(parseHost);

  const params = new URLSearchParams(query);
  const sessionAttrs = sessionAttrsOf(params.get('target_session_attrs'));
  params.delete('target_session_attrs');
  return { scheme, user: user || undefined, password, hosts, database: decode(path, 'database'), sessionAttrs, params };
}

// The port always written out: what pg-connection-string reads from a bare `[::1]` is port "".
function formatHost({ host, port }: PgHost): string {
  return `${host.includes(':') ? `[${host}]` : encodeURIComponent(host)}:${port}`;
}

/** The URL again, with `hosts` (all of the parsed URL's by default) and its target_session_attrs. */
export function formatPgUrl(parsed: PgUrl, hosts: PgHost[] = parsed.hosts, withAttrs = true): string {
  const user = parsed.user === undefined ? '' : encodeURIComponent(parsed.user);
  const password = parsed.password === undefined ? '' : `:${encodeURIComponent(parsed.password)}`;
  const userInfo = user || password ? `${user}${password}@` : '';
  const params = new URLSearchParams(parsed.params);
  if (withAttrs && parsed.sessionAttrs !== undefined) params.set('target_session_attrs', parsed.sessionAttrs);
  const query = params.size > 0 ? `?${params.toString()}` : '';
  return `${parsed.scheme}://${userInfo}${hosts.map(formatHost).join(',')}/${encodeURIComponent(parsed.database)}${query}`;
}

/** The single-host URL pg understands for one of the parsed hosts: no target_session_attrs, the rest as given. */
export function singleHostUrl(parsed: PgUrl, host: PgHost): string {
  return formatPgUrl(parsed, [host], false);
}

/**
 * A URL that needs more than pg does alone: several hosts, or a demand on the session. A single
 * host without target_session_attrs is pg's own business, byte for byte as before.
 */
export function needsHostChoice(url: string): boolean {
  if (!isPgUrl(url)) return false;
  const parsed = parsePgUrl(url);
  return parsed.hosts.length > 1 || (parsed.sessionAttrs !== undefined && parsed.sessionAttrs !== 'any');
}

/** The database a URL names (decoded), whatever its number of hosts. */
export function databaseOf(url: string): string {
  if (!isPgUrl(url)) return decodeURIComponent(new URL(url).pathname.slice(1));
  return parsePgUrl(url).database;
}

/** The same URL naming another database; a single-host URL goes through WHATWG URL as it always has. */
export function withDatabaseName(url: string, database: string): string {
  if (!needsHostChoice(url)) {
    const parsed = new URL(url);
    parsed.pathname = `/${database}`;
    return parsed.toString();
  }
  return formatPgUrl({ ...parsePgUrl(url), database });
}
