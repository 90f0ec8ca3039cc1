/** Three tiers (CONTRIBUTING.md): unit specs beside the code, integration specs against the
 * machine's real servers, e2e specs through real app processes. */
const transform = {
  // Transpile only: `npm test` type-checks the whole tree once with tsc before Jest runs.
  '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.spec.json' }],
};
const moduleNameMapper = {
  '^@baton/task-contract$': '<rootDir>/libs/task-contract/src',
  '^@baton/task-contract/(.*)$': '<rootDir>/libs/task-contract/src/$1',
  '^@baton/locks$': '<rootDir>/libs/locks/src',
  '^@baton/locks/(.*)$': '<rootDir>/libs/locks/src/$1',
  '^@baton/scheduler-client$': '<rootDir>/libs/scheduler-client/src',
  '^@baton/scheduler-client/(.*)$': '<rootDir>/libs/scheduler-client/src/$1',
  '^@baton/time$': '<rootDir>/libs/time/src',
  '^@baton/time/(.*)$': '<rootDir>/libs/time/src/$1',
};
const common = { transform, moduleNameMapper, testEnvironment: 'node', rootDir: __dirname };

module.exports = {
  // Hooks start real processes and servers, and tests wait for final states: on a 2-core machine
  // loaded by the other lanes a start alone may take 20 s or more (a start has 90 s).
  testTimeout: 180_000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/{apps,libs}/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/{apps,libs,test}/**/*.int-spec.ts'],
    },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
    },
  ],
};
