import path from 'node:path';
import { ESLint } from 'eslint';
import prettier from 'prettier';
import { describe, expect, it } from 'vitest';

// Generated code is skipped by lint and format by rule — it lives in a folder named `generated/` —
// not by a list of its files (eslint.config.js `ignores`, .prettierignore).

const root = path.resolve(import.meta.dirname, '../..');

describe('generated code', () => {
  it('GEN-01: ESLint and Prettier skip any file under a generated/ folder, and only those', async () => {
    const eslint = new ESLint({ cwd: root });
    const ignorePath = path.join(root, '.prettierignore');
    const skipped = async (file: string) => ({
      file,
      eslint: await eslint.isPathIgnored(path.join(root, file)),
      prettier: (await prettier.getFileInfo(path.join(root, file), { ignorePath })).ignored,
    });
    for (const file of ['src/client/generated/api.d.ts', 'src/generated/x.ts', 'bench/generated/y.ts']) {
      expect(await skipped(file)).toEqual({ file, eslint: true, prettier: true });
    }
    for (const file of ['src/client/index.ts', 'src/generated.ts', 'bench/flash.bench.ts']) {
      expect(await skipped(file)).toEqual({ file, eslint: false, prettier: false });
    }
  });
});
