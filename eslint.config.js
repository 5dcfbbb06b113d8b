import tseslint from 'typescript-eslint';
import walls from './eslint/module-walls.js';

export default tseslint.config(
  // Generated code lives in a folder named `generated/` (anywhere); lint and format skip it by that name.
  { ignores: ['node_modules/**', '.flashpay/**', 'bin/**', 'build/**', '**/generated/**', 'packages/*/dist/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // Module walls: production code enters another domain only through its index.ts (docs/architecture.md).
    files: ['src/**/*.ts', 'bench/**/*.ts'],
    plugins: { flashpay: walls },
    rules: { 'flashpay/module-walls': ['error', { root: import.meta.dirname }] },
  },
  {
    // No import circle under src/: between files, the rooms of a module, or modules (eslint/import-circles.js).
    files: ['src/**/*.ts'],
    plugins: { flashpay: walls },
    rules: { 'flashpay/no-import-circles': ['error', { root: import.meta.dirname }] },
  },
);
