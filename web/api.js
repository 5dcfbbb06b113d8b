// @ts-check
// Shared by both pages: one HTTP helper, problem+json shown from its title and detail, and a
// tiny DOM builder that only ever sets text (never HTML), so data cannot inject markup.

/**
 * @param {string} method
 * @param {string} path
 * @param {{ token?: string | null, body?: unknown, key?: string, headers?: Record<string, string> }} [options]
 * @returns {Promise<{ ok: boolean, status: number, body: any }>}
 */
export async function api(method, path, options = {}) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json', ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.key) headers['idempotency-key'] = options.key;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  let body;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = { title: `HTTP ${response.status}`, detail: text.slice(0, 200) };
  }
  return { ok: response.ok, status: response.status, body };
}

/** "Sold out — no unit of tee is left": an RFC 9457 problem as one line for a person. */
export function problemText(/** @type {any} */ body, /** @type {number} */ status) {
  const title = body && typeof body.title === 'string' ? body.title : `HTTP ${status}`;
  return body && typeof body.detail === 'string' ? `${title} — ${body.detail}` : title;
}

/** A new idempotency key: random, so two tabs never share one. */
export const newKey = () => crypto.randomUUID();

/**
 * @param {string} tag
 * @param {Record<string, string | boolean | ((e: Event) => void)>} [attrs]
 * @param {Array<Node | string | null | undefined | false>} children
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) el.setAttribute(name, '');
    else if (value !== false) el.setAttribute(name, value);
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

export const money = (/** @type {number} */ minor) => (minor / 100).toFixed(2);

/** Shows or clears the page's error line (an ARIA live region, so screen readers hear it). */
export function showError(/** @type {HTMLElement} */ region, /** @type {string} */ text) {
  region.textContent = text;
  region.hidden = text === '';
}
