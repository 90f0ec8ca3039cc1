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
  message: 'import a library by its name (@baton/task-contract, @baton/locks, @baton/time) only',
};

/**
 * One time source (libs/time): every clock read, sleep, timer and deadline goes through a `Clock`
 * that is handed in, so tests move a `ManualClock` instead of waiting. Code that is not handed
 * one and must read the process's clock uses `systemClock` from @baton/time.
 */
const TIME_SOURCE = 'use the injected Clock (@baton/time), or systemClock where none is handed in';
const NO_RAW_TIME = [
  {
    selector: "MemberExpression[object.name='Date'][property.name='now']",
    message: `Date.now(): ${TIME_SOURCE}`,
  },
  {
    selector: "NewExpression[callee.name='Date'][arguments.length=0]",
    message: `new Date(): ${TIME_SOURCE} (clock.date())`,
  },
  {
    selector: 'CallExpression[callee.name=/^(setTimeout|setInterval)$/]',
    message: `a raw timer: ${TIME_SOURCE}`,
  },
  {
    selector:
      "MemberExpression[object.name='globalThis'][property.name=/^(setTimeout|setInterval)$/]",
    message: `a raw timer: ${TIME_SOURCE}`,
  },
  {
    selector: "MemberExpression[object.name='performance'][property.name='now']",
    message: `performance.now(): ${TIME_SOURCE} (clock.monotonic())`,
  },
  {
    selector: "MemberExpression[object.name='AbortSignal'][property.name='timeout']",
    message: `AbortSignal.timeout(): ${TIME_SOURCE} (clock.deadline())`,
  },
  {
    selector: 'ImportDeclaration[source.value=/^(node:)?timers(\\/promises)?$/]',
    message: `node's timers: ${TIME_SOURCE}`,
  },
];

/**
 * Where the process's own time may be read: the time source itself. Benchmarks measure real
 * speed, and the console's pages run in the browser (its polling is checked by browser tests),
 * so neither is in the rule's files. Unit specs are held to it too, as they move a ManualClock;
 * integration and e2e tests may wait for a real server, through their helpers.
 */
const RAW_TIME_OK = [
  'libs/time/src/clock.ts',
  'libs/time/src/manual-clock.ts',
  // Published on its own and depending on nothing but Node.js: its default clock is its own.
  'libs/scheduler-client/src/clock.ts',
];

/**
 * Tests wait for a state, never for a time (CONTRIBUTING.md, "The test tiers"): a unit or
 * in-process test moves a ManualClock; an integration or end-to-end test waits with the helpers of
 * test/support/processes.ts (`eventually` for a state, `holds` for "nothing more happens",
 * `steady` for a count that stopped moving, `schedule` for a scenario's timeline of load and
 * faults), which are the only places a test's timer runs.
 */
const WAIT_FOR_A_STATE =
  'a test waits for a state (eventually, holds, steady) or plays a schedule (test/support/processes.ts), or moves a ManualClock; never a bare sleep';
const NO_TEST_SLEEP = [
  {
    selector: 'CallExpression[callee.name=/^(setTimeout|setInterval|sleep|delay)$/]',
    message: WAIT_FOR_A_STATE,
  },
  {
    selector:
      "MemberExpression[object.name='globalThis'][property.name=/^(setTimeout|setInterval)$/]",
    message: WAIT_FOR_A_STATE,
  },
  {
    selector: 'ImportDeclaration[source.value=/^(node:)?timers(\\/promises)?$/]',
    message: WAIT_FOR_A_STATE,
  },
];

/** Test files whose waits are not under that rule, each with why. */
const TEST_WAITS_OK = [
  // The waits themselves.
  'test/support/**',
  // Real lock servers' TTLs and sessions must run out: time passing is what its cases test.
  'libs/locks/test/locks.conformance.int-spec.ts',
  // Child processes and fake servers the lock tests drive, not tests.
  'libs/*/test/fixtures/**',
];

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
          paths: ['ioredis', 'node-zookeeper-client', 'etcd3', 'mysql2', 'undici'],
          patterns: [LIBRARY_BY_NAME],
        },
      ],
    },
  },
  {
    files: ['apps/**/*.ts', 'libs/**/*.ts', 'bin/**/*.ts'],
    ignores: [...RAW_TIME_OK, 'apps/console/ui/**', '**/*.int-spec.ts', 'libs/*/test/**'],
    rules: { 'no-restricted-syntax': ['error', ...NO_RAW_TIME] },
  },
  {
    files: ['test/**/*.ts', '**/*.int-spec.ts', 'libs/*/test/**/*.ts'],
    ignores: TEST_WAITS_OK,
    rules: { 'no-restricted-syntax': ['error', ...NO_TEST_SLEEP] },
  },
  {
    // A file past 400 lines has more than one reason to change: split it by responsibility.
    // Files allowed to be longer are listed below with the reason.
    files: ['**/*.ts', '**/*.tsx'],
    ignores: LONG_FILES_OK,
    rules: { 'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }] },
  },
);
