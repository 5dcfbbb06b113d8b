#!/usr/bin/env node
// Runs the compiled copy in build/dist when it is current (bin/dist.js), else the TypeScript
// sources directly through tsx, so a checkout needs no build step. FLASHPAY_TSX=1 forces tsx.
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { DIST, distIsCurrent } from './dist.js';

if (process.env.FLASHPAY_TSX !== '1' && distIsCurrent()) {
  await import(pathToFileURL(path.join(DIST, 'src', 'cli', 'main.js')).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
