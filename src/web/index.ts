// The browser pages (storefront `/`, operations console `/ops`) and the reads they need.
import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { consoleRoutes } from './web.console.ts';
import { devTokenRoute } from './web.dev-token.ts';
import { webPages } from './web.pages.ts';
import { shopRoutes } from './web.shop.ts';

export function webRoutes(app: FastifyInstance, deps: AppDeps): void {
  webPages(app);
  devTokenRoute(app, deps);
  shopRoutes(app, deps);
  consoleRoutes(app, deps);
}
