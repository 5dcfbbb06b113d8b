import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { ROOT } from '../platform/root.ts';

// The pages are plain HTML and ES modules under web/, served as they are: no bundler, no build
// step for `npm start`, nothing fetched from a CDN. A fixed list, so no request names a path.
const WEB_DIR = path.join(ROOT, 'web');
const chartDir = path.dirname(createRequire(import.meta.url).resolve('chart.js'));

const TYPES = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
} as const;

const FILES: Record<string, { file: string; type: keyof typeof TYPES }> = {
  '/': { file: path.join(WEB_DIR, 'shop.html'), type: 'html' },
  '/ops': { file: path.join(WEB_DIR, 'ops.html'), type: 'html' },
  '/web/api.js': { file: path.join(WEB_DIR, 'api.js'), type: 'js' },
  '/web/shop.js': { file: path.join(WEB_DIR, 'shop.js'), type: 'js' },
  '/web/ops.js': { file: path.join(WEB_DIR, 'ops.js'), type: 'js' },
  '/web/ops.order.js': { file: path.join(WEB_DIR, 'ops.order.js'), type: 'js' },
  '/web/ops.sku.js': { file: path.join(WEB_DIR, 'ops.sku.js'), type: 'js' },
  '/web/ops.skus.js': { file: path.join(WEB_DIR, 'ops.skus.js'), type: 'js' },
  '/web/ops.notes.js': { file: path.join(WEB_DIR, 'ops.notes.js'), type: 'js' },
  // The console's deep links (issue 36): the same page, which opens that order or SKU after sign-in.
  '/ops/orders/:id': { file: path.join(WEB_DIR, 'ops.html'), type: 'html' },
  '/ops/skus/:sku': { file: path.join(WEB_DIR, 'ops.html'), type: 'html' },
  '/ops/skus': { file: path.join(WEB_DIR, 'ops.html'), type: 'html' },
  '/web/style.css': { file: path.join(WEB_DIR, 'style.css'), type: 'css' },
  // Chart.js's UMD build from node_modules: it sets `window.Chart`, no module loader needed.
  '/web/chart.umd.js': { file: path.join(chartDir, 'chart.umd.min.js'), type: 'js' },
};

// Only our own origin: no inline script, no third-party host; a stolen page cannot be framed.
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

export function webPages(app: FastifyInstance): void {
  for (const [url, { file, type }] of Object.entries(FILES)) {
    app.get(url, { schema: { hide: true } }, async (_request, reply) => {
      const body = await readFile(file);
      return reply
        .type(TYPES[type])
        .header('cache-control', 'no-cache')
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('content-security-policy', CSP)
        .send(body);
    });
  }
}
