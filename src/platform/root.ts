import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The checkout's root (where package.json, migrations/ and web/ are), found from this file whether
 * it runs from src/ through tsx or from the compiled copy in build/dist/src/ (bin/dist.js).
 */
export const ROOT = rootAbove(path.dirname(fileURLToPath(import.meta.url)));

function rootAbove(dir: string): string {
  for (let at = dir; ; at = path.dirname(at)) {
    if (existsSync(path.join(at, 'package.json')) && existsSync(path.join(at, 'migrations'))) return at;
    if (path.dirname(at) === at) throw new Error(`no flashpay checkout above ${dir}`);
  }
}
