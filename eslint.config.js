import tseslint from 'typescript-eslint';
import walls from './eslint/module-walls.js';

export default tseslint.config(
  { ignores: ['node_modules/**', '.flashpay/**', 'bin/**', 'build/**'] },
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
);
