import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import type { NodeSpec } from './node.ts';

// HAProxy's own error pages are HTML; flashpay's clients expect problem+json with a `code` and a
// Retry-After on every 503, whoever answers it (docs/errors.md).
function problemPage(status: number, reason: string, detail: string): string {
  const body = JSON.stringify({
    type: 'https://flashpay.dev/errors/unavailable',
    title: 'Service temporarily unavailable',
    status,
    code: 'UNAVAILABLE',
    detail,
  });
  return [
    `HTTP/1.1 ${status} ${reason}`,
    'content-type: application/problem+json',
    'retry-after: 1',
    'cache-control: no-store',
    'connection: close',
    `content-length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

/** An API process behind HAProxy; `host` is its address under `cluster up --isolated`. */
export interface ApiServer {
  name: string;
  port: number;
  host?: string;
}

/**
 * Round robin over the API processes, each checked on /readyz (red while its database or broker is
 * down) every 500 ms. A request whose process died before answering (connection refused, closed
 * without a response) is sent to another one: every write carries an Idempotency-Key, so the second
 * attempt replays or finishes what the first began.
 */
export function haproxyConfig(port: number, apis: ApiServer[], pages: string, bind = '127.0.0.1'): string {
  return `global
  maxconn 4096
  stats socket ${pages}/admin.sock mode 600 level admin

defaults
  mode http
  timeout connect 1s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 10s
  # A /readyz slower than this counts as a failed check; under a sale's load 500 ms (the default,
  # inter) marked healthy processes down.
  timeout check 2s
  retries 3
  option redispatch 1
  retry-on conn-failure empty-response
  errorfile 502 ${pages}/502.http
  errorfile 503 ${pages}/503.http
  errorfile 504 ${pages}/504.http

frontend api
  bind ${bind}:${port}
  default_backend apis

backend apis
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  default-server inter 500ms fall 2 rise 2
${apis.map((api) => `  server ${api.name} ${api.host ?? '127.0.0.1'}:${api.port} check`).join('\n')}
`;
}

export async function haproxySpec(options: {
  dir: string;
  logs: string;
  port: number;
  apis: ApiServer[];
  /** HAProxy's own address (`cluster up --isolated`); loopback by default. */
  host?: string;
}): Promise<NodeSpec> {
  const file = path.join(options.dir, 'haproxy.cfg');
  await writeFile(path.join(options.dir, '502.http'), problemPage(502, 'Bad Gateway', 'an API process failed'));
  await writeFile(
    path.join(options.dir, '503.http'),
    problemPage(503, 'Service Unavailable', 'no API process is ready'),
  );
  await writeFile(path.join(options.dir, '504.http'), problemPage(504, 'Gateway Timeout', 'an API process timed out'));
  const host = options.host ?? '127.0.0.1';
  await writeFile(file, haproxyConfig(options.port, options.apis, options.dir, host));
  return {
    name: 'haproxy',
    kind: 'haproxy',
    url: `http://${host}:${options.port}`,
    command: 'haproxy',
    args: ['-db', '-f', file],
    env: {},
    log: path.join(options.logs, 'haproxy.log'),
  };
}

/** The socket HAProxy answers admin commands on, in the directory its config lives in. */
export function haproxySocket(haproxyDir: string): string {
  return path.join(haproxyDir, 'admin.sock');
}

/** Each API server's status as HAProxy sees it now ("UP", "DOWN", "UP 1/2"…), from `show stat`. */
export async function haproxyServers(haproxyDir: string): Promise<Map<string, string>> {
  const csv = await new Promise<string>((resolve, reject) => {
    let out = '';
    const socket = net.connect(haproxySocket(haproxyDir), () => socket.end('show stat\n'));
    socket.setTimeout(2_000, () => socket.destroy(new Error('haproxy admin socket timed out')));
    socket.on('data', (chunk: Buffer) => (out += chunk.toString()));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
  const [header = '', ...rows] = csv.trim().split('\n');
  const columns = header.replace(/^# /, '').split(',');
  const [proxy, server, status] = ['pxname', 'svname', 'status'].map((name) => columns.indexOf(name));
  const states = new Map<string, string>();
  for (const row of rows) {
    const cells = row.split(',');
    if (cells[proxy!] === 'apis' && !['FRONTEND', 'BACKEND'].includes(cells[server!]!))
      states.set(cells[server!]!, cells[status!]!);
  }
  return states;
}
