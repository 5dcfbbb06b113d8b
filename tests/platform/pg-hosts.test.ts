import { parse } from 'pg-connection-string';
import { describe, expect, it } from 'vitest';
import { createPool } from '../../src/platform/db.ts';
import { routeFor } from '../../src/platform/pg-primary.ts';
import {
  databaseOf,
  formatPgUrl,
  needsHostChoice,
  parsePgUrl,
  singleHostUrl,
  withDatabaseName,
} from '../../src/platform/pg-hosts.ts';

// Proves libpq's multi-host URL is read as libpq reads it (hosts, ports, brackets, encodings,
// target_session_attrs) and that what pg is handed is a single-host URL it parses to the same
// credentials and parameters; a single-host URL without target_session_attrs is left untouched.
describe('pg-hosts: libpq multi-host URLs', () => {
  it('MH-P01: hosts with and without ports, IPv6 in brackets, default 5432', () => {
    const parsed = parsePgUrl('postgres://app@db1:5433,db2,[::1]:6000,[fe80::1]/shop?target_session_attrs=read-write');
    expect(parsed.hosts).toEqual([
      { host: 'db1', port: 5433 },
      { host: 'db2', port: 5432 },
      { host: '::1', port: 6000 },
      { host: 'fe80::1', port: 5432 },
    ]);
    expect(parsed.user).toBe('app');
    expect(parsed.password).toBeUndefined();
    expect(parsed.database).toBe('shop');
    expect(parsed.sessionAttrs).toBe('read-write');
    expect([...parsed.params.keys()]).toEqual([]);
  });

  it('MH-P02: url-encoded user, password and database; a raw @ in the password; other params kept', () => {
    const url =
      'postgresql://us%40er:p%3Aw@d%2F@h1:1,h2:2/my%20db?sslmode=disable&application_name=fp&options=-c%20jit%3Doff&target_session_attrs=primary';
    const parsed = parsePgUrl(url);
    expect(parsed.scheme).toBe('postgresql');
    expect(parsed.user).toBe('us@er');
    expect(parsed.password).toBe('p:w@d/');
    expect(parsed.database).toBe('my db');
    expect(parsed.sessionAttrs).toBe('primary');
    expect(Object.fromEntries(parsed.params)).toEqual({
      sslmode: 'disable',
      application_name: 'fp',
      options: '-c jit=off',
    });
    // What pg is given for one host parses, by pg's own parser, to the same values.
    const single = parse(singleHostUrl(parsed, parsed.hosts[1]!));
    expect(single).toMatchObject({
      user: 'us@er',
      password: 'p:w@d/',
      host: 'h2',
      port: '2',
      database: 'my db',
      sslmode: 'disable',
      application_name: 'fp',
      options: '-c jit=off',
    });
    expect(single).not.toHaveProperty('target_session_attrs');
    // And the whole URL formats back to one that parses the same.
    expect(parsePgUrl(formatPgUrl(parsed))).toEqual(parsed);
  });

  it('MH-P03: IPv6 formats back in brackets for pg', () => {
    const parsed = parsePgUrl('postgres://u:p@[::1]:5999,[::2]/d?target_session_attrs=read-write');
    expect(singleHostUrl(parsed, parsed.hosts[0]!)).toBe('postgres://u:p@[::1]:5999/d');
    expect(parse(singleHostUrl(parsed, parsed.hosts[1]!))).toMatchObject({ host: '::2', port: '5432' });
  });

  it('MH-P04: malformed input is refused with a message naming what is wrong', () => {
    expect(() => parsePgUrl('mysql://h/d')).toThrow(/postgres:\/\//);
    expect(() => parsePgUrl('postgres://u@h1,,h2/d')).toThrow(/empty host/);
    expect(() => parsePgUrl('postgres://u@h1:99999/d')).toThrow(/not a TCP port/);
    expect(() => parsePgUrl('postgres://u@h1:abc/d')).toThrow(/cannot read host/);
    expect(() => parsePgUrl('postgres://u@::1:5432/d')).toThrow(/IPv6 addresses go in brackets/);
    expect(() => parsePgUrl('postgres://u@h1,h2/d?target_session_attrs=standby')).toThrow(/read-write/);
    expect(() => parsePgUrl('postgres://u%zz@h1/d')).toThrow(/percent-encoding in the user/);
  });

  it('MH-P05: only several hosts or a demand on the session need a choice; one plain host stays pg’s', async () => {
    expect(needsHostChoice('postgres://u@h1:1,h2:2/d')).toBe(true);
    expect(needsHostChoice('postgres://u@h1:1,h2:2/d?target_session_attrs=any')).toBe(true);
    expect(needsHostChoice('postgres://u@h1:1/d?target_session_attrs=read-write')).toBe(true);
    expect(needsHostChoice('postgres://u@h1:1/d?target_session_attrs=any')).toBe(false);
    expect(needsHostChoice('postgres://u:p@127.0.0.1:5432/d?sslmode=disable')).toBe(false);
    const plain = 'postgres://u:p%2F@127.0.0.1:5432/d?application_name=x';
    expect(routeFor(plain)).toEqual({ connectionString: plain });
    const multi = routeFor('postgres://u@h1:1,h2:2/d?target_session_attrs=read-write');
    expect(multi.connectionString).toBe('postgres://u@h1:1/d');
    expect(multi.Client).toBeTypeOf('function');
    // The pool of a plain URL is the plain pg.Pool: no Client of ours, the URL as given.
    const pool = createPool(plain, 1);
    expect(pool.options).toMatchObject({ connectionString: plain });
    expect(pool.options).not.toHaveProperty('Client');
    await pool.end();
  });

  it('MH-P06: the database of a URL, and the same URL naming another, for one host or several', () => {
    expect(databaseOf('postgres://u@h1,h2:7/flash%20pay?target_session_attrs=read-write')).toBe('flash pay');
    expect(databaseOf('postgres://u:p@127.0.0.1:5432/flashpay')).toBe('flashpay');
    expect(withDatabaseName('postgres://u:p@h1:5,[::1]:6/a?target_session_attrs=read-write&sslmode=disable', 'b')).toBe(
      'postgres://u:p@h1:5,[::1]:6/b?sslmode=disable&target_session_attrs=read-write',
    );
    // One host: exactly what `new URL()` made of it before.
    expect(withDatabaseName('postgres://u:p@127.0.0.1:5432/a?x=1', 'b')).toBe('postgres://u:p@127.0.0.1:5432/b?x=1');
  });
});
