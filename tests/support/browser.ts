import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { it, type TestContext } from 'vitest';

// Debian's Chromium: Playwright's own browser download is not reachable from this network.
export const CHROMIUM = process.env.FLASHPAY_CHROMIUM ?? '/usr/bin/chromium';

// A closed network refuses the browser's background connections: turn them all off.
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/**
 * Browser tests run when Chromium is installed and say "skipped: no Chromium" otherwise;
 * FLASHPAY_REQUIRE_BROWSER=1 (set by .ci/run) turns a missing Chromium into a failure.
 */
export function browserIt(name: string, fn: (context: TestContext) => Promise<void>, timeoutMs: number): void {
  if (existsSync(CHROMIUM)) it(name, fn, timeoutMs);
  else if (process.env.FLASHPAY_REQUIRE_BROWSER === '1')
    it(name, () => {
      throw new Error(
        `FLASHPAY_REQUIRE_BROWSER=1 but there is no Chromium at ${CHROMIUM} (apt-get install -y chromium)`,
      );
    });
  else it.skip(`${name} — skipped: no Chromium at ${CHROMIUM}`, () => undefined);
}

export interface TestBrowser {
  context: BrowserContext;
  page(): Promise<Page>;
  close(): Promise<void>;
}

/** One Chromium with a fresh profile (no state from any earlier run), phone or desktop sized. */
export async function launchBrowser(viewport = { width: 1200, height: 1000 }): Promise<TestBrowser> {
  const profile = await mkdtemp(path.join(os.tmpdir(), 'flashpay-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport,
  });
  // A loaded 2-core machine: waits are on state, bounded generously.
  context.setDefaultTimeout(30_000);
  return {
    context,
    page: () => context.newPage(),
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

export const SCREENSHOT_DIR = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../docs');
