// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import boundaries from './tools/eslint/module-boundaries.mjs';

/** Tests, migrations, benchmarks and fixtures may be long: they are read top to bottom. */
const LONG_FILES_OK = [
  '**/*.spec.ts',
  '**/*.int-spec.ts',
  '**/*.e2e-spec.ts',
  '**/migrations/**',
  'test/**',
  'bench/**',
  'libs/*/test/**',
  // Generated from openapi/scheduler.v1.json by `npm run openapi`, drift-checked, never edited.
  'libs/*/src/generated/**',
];

/** A library is used by its package name, never by a path into it. */
const LIBRARY_BY_NAME = {
  group: ['@baton/*/*'],
  message: 'import a library by its name (@baton/task-contract, @baton/locks) only',
};

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      'openapi/**',
      'libs/scheduler-client/src/generated/**',
      '**/*.js',
      '**/*.mjs',
    ],
  },
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
    // A scheduler module is entered only through its index.ts (tools/eslint/module-boundaries.mjs);
    // a library only through its package name.
    files: ['apps/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'bin/**/*.ts'],
    plugins: { baton: boundaries },
    rules: {
      'baton/module-boundaries': 'error',
      'no-restricted-imports': ['error', { patterns: [LIBRARY_BY_NAME] }],
    },
  },
  {
    // Services decide; drivers and repositories do the I/O (CONTRIBUTING.md).
    files: ['**/*.service.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['ioredis', 'redlock', 'node-zookeeper-client', 'etcd3', 'mysql2', 'undici'],
          patterns: [LIBRARY_BY_NAME],
        },
      ],
    },
  },
  {
    // A file past 400 lines has more than one reason to change: split it by responsibility.
    // Files allowed to be longer are listed below with the reason.
    files: ['**/*.ts'],
    ignores: LONG_FILES_OK,
    rules: { 'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }] },
  },
);
