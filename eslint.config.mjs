// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'openapi/**', '**/*.js', '**/*.mjs'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-console': 'off',
    },
  },
  {
    // Services decide; drivers and repositories do the I/O (CONVENTIONS.md rule 2).
    files: ['**/*.service.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: ['ioredis', 'redlock', 'node-zookeeper-client', 'etcd3', 'mysql2', 'undici'] },
      ],
    },
  },
);
