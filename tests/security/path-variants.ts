import net from 'node:net';

// The spellings of one path that a router, a proxy or a guard may read differently (issue 40:
// `/%5Fcontrol/…` was routed to the control API while its guard, reading the raw URL, saw no
// `/_control`). Each is sent as raw bytes: fetch and URL would normalise `./`, `%2E` and the case
// of the host part before they left, and the test must see what an attacker's socket sends.

const hex = (char: string, lower = false) => {
  const code = char.charCodeAt(0).toString(16).padStart(2, '0');
  return `%${lower ? code : code.toUpperCase()}`;
};

/** Overlong (invalid) two-byte UTF-8 spellings of ASCII: `/` → %C0%AF, `_` → %C1%9F, `.` → %C0%AE. */
const overlong = (char: string) => {
  const code = char.charCodeAt(0);
  return `%${(0xc0 | (code >> 6)).toString(16).toUpperCase()}%${(0x80 | (code & 0x3f)).toString(16).toUpperCase()}`;
};

/** Replaces the n-th (0-based) occurrence of `find` in `text`. */
function replaceNth(text: string, find: string, by: string, n: number): string {
  let at = -1;
  for (let i = 0; i <= n; i++) {
    at = text.indexOf(find, at + 1);
    if (at < 0) return text;
  }
  return text.slice(0, at) + by + text.slice(at + find.length);
}

/**
 * Variants of a concrete path (`/_control/callbacks/send`): percent-encoded characters (`%5F`,
 * `%5f`, an encoded letter, `%2F`, `%2E`), doubled slashes, `./` and `../` segments, upper case,
 * a trailing slash, `;params`, overlong UTF-8, a backslash, and the absolute form of the target.
 */
export function pathVariants(path: string, origin: string): string[] {
  const slashes = path.split('/').length - 1;
  const first = path.split('/')[1] ?? '';
  const rest = path.slice(first.length + 1);
  const variants = new Set<string>([path]);
  const add = (v: string) => variants.add(v);
  add(path.replaceAll('_', hex('_')));
  add(path.replaceAll('_', hex('_', true)));
  add(path.replaceAll('_', overlong('_')));
  // The first letter of every segment encoded, in both cases of hex digits.
  const letterEncoded = (lower: boolean) => path.replace(/\/([A-Za-z])/g, (_m, c: string) => `/${hex(c, lower)}`);
  add(letterEncoded(false));
  add(letterEncoded(true));
  for (let n = 1; n < slashes; n++) {
    add(replaceNth(path, '/', '%2F', n));
    add(replaceNth(path, '/', '%2f', n));
    add(replaceNth(path, '/', overlong('/'), n));
    add(replaceNth(path, '/', '//', n));
    add(replaceNth(path, '/', '/./', n));
    add(replaceNth(path, '/', '/%2E/', n));
    add(replaceNth(path, '/', '/%2e/', n));
    add(replaceNth(path, '/', `/${overlong('.')}/`, n));
    add(replaceNth(path, '/', `/x/../`, n));
    add(replaceNth(path, '/', `/x/%2E%2E/`, n));
    add(replaceNth(path, '/', `;x=1/`, n));
    add(replaceNth(path, '/', '\\', n));
    add(replaceNth(path, '/', '%5C', n));
  }
  add(`/${path}`);
  add(`/.${path}`);
  add(`/%2E${path}`);
  add(`/x/..${path}`);
  add(`/x/%2e%2e${path}`);
  add(path.toUpperCase());
  add(`/${first.toUpperCase()}${rest}`);
  add(`${path}/`);
  add(`${path}//`);
  add(`${path};x=1`);
  add(`/${first};${rest}`);
  add(`${path}%00`);
  add(`${path}%20`);
  add(`${path}?x=/`);
  add(`${origin}${path}`);
  add(`${origin}/${first.replaceAll('_', hex('_'))}${rest}`);
  return [...variants];
}

export interface RawReply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** One request as raw bytes on a fresh socket (`Connection: close`), the request target verbatim. */
export function sendRaw(
  origin: string,
  method: string,
  target: string,
  headers: Record<string, string>,
  body?: string,
): Promise<RawReply> {
  const { hostname, port, host } = new URL(origin);
  const lines = [`${method} ${target} HTTP/1.1`, `Host: ${host}`, 'Connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== undefined) lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`);
  const request = `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`;
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const head = split < 0 ? text : text.slice(0, split);
      const rawBody = split < 0 ? '' : text.slice(split + 4);
      let parsed: unknown = rawBody;
      try {
        parsed = rawBody ? JSON.parse(rawBody) : undefined;
      } catch {
        // not JSON (a page, a script): kept as text
      }
      resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1] ?? 0), body: parsed });
    });
  });
}

/** A route's declared URL with its parameters filled (`:id` → an order id, `*` → `alice`). */
export function concretePath(url: string, params: Record<string, string>, fallback: string): string {
  return url.replace(/:([A-Za-z_]+)/g, (_m, name: string) => params[name] ?? fallback).replace(/\*$/, 'alice');
}

/** Runs `work` over `items`, at most `width` at a time. */
export async function inBatches<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>) {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(work));
}
