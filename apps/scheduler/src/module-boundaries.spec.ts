import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');

interface Message {
  ruleId: string | null;
  message: string;
}

/**
 * Lints each probe as if it were the file at its path (nothing is written), with the project's
 * config, in one ESLint process: starting ESLint and loading its config is what takes the time,
 * so it is done once for all the cases, not once a case.
 */
function lintAll(probes: { path: string; code: string }[]): Message[][] {
  const script = `
    const { ESLint } = require('eslint');
    let input = '';
    process.stdin.on('data', (chunk) => (input += chunk));
    process.stdin.on('end', async () => {
      const eslint = new ESLint({ cwd: process.cwd() });
      const out = [];
      for (const { path, code } of JSON.parse(input)) {
        out.push((await eslint.lintText(code, { filePath: path }))[0].messages);
      }
      process.stdout.write(JSON.stringify(out));
    });`;
  const run = spawnSync(process.execPath, ['-e', script], {
    cwd: ROOT,
    input: JSON.stringify(probes),
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (!run.stdout) throw new Error(`eslint printed nothing: ${run.stderr}`);
  return JSON.parse(run.stdout) as Message[][];
}

const SOURCE = 'apps/scheduler/src/engine/probe.ts';
const LONG = `${Array.from({ length: 401 }, (_, i) => `export const line${i} = ${i};`).join('\n')}\n`;
const RAW_TIME =
  'export const at = Date.now();\nexport const wait = new Promise((r) => setTimeout(r, 10));\n';

/** What each case lints: a deliberate breach of one rule, or the same thing done right. */
const PROBES = {
  pastIndex: {
    path: SOURCE,
    code: "import { TasksRepository } from '../task-store/tasks.repository';\nexport const probe = TasksRepository;\n",
  },
  throughIndex: {
    path: SOURCE,
    code: "import { TasksRepository } from '../task-store';\nimport { TaskSteps } from './task-steps';\nexport const probe = [TasksRepository, TaskSteps];\n",
  },
  libraryPath: {
    path: SOURCE,
    code: "import { WorkerClient } from '@baton/task-contract/client/worker-client';\nexport const probe = WorkerClient;\n",
  },
  longSource: { path: SOURCE, code: LONG },
  longSpec: { path: 'apps/scheduler/src/engine/probe.spec.ts', code: LONG },
  rawTimeSource: { path: SOURCE, code: RAW_TIME },
  rawTimeSpec: { path: 'apps/scheduler/src/engine/probe.spec.ts', code: RAW_TIME },
  rawTimeLibSpec: { path: 'libs/locks/src/probe.spec.ts', code: RAW_TIME },
  rawTimeIntSpec: { path: 'apps/scheduler/src/engine/probe.int-spec.ts', code: RAW_TIME },
  sleepE2e: { path: 'test/probe.e2e-spec.ts', code: RAW_TIME },
  sleepHelper: { path: 'test/support/probe.ts', code: RAW_TIME },
  stateE2e: {
    path: 'test/probe.e2e-spec.ts',
    code: "import { eventually } from './support/processes';\nexport const ready = eventually(async () => (Date.now() > 0 ? true : undefined));\n",
  },
  injectedTime: {
    path: 'apps/scheduler/src/engine/probe.spec.ts',
    code: "import { ManualClock } from '../common';\nconst clock = new ManualClock();\nexport const at = clock.now();\nexport const wait = clock.sleep(10);\n",
  },
};

const rules = (messages: Message[]) => messages.map((m) => m.ruleId);

/**
 * The layout's limits hold because lint enforces them (eslint.config.mjs): a module is entered only
 * through its index.ts, no source file grows past 400 lines, and time comes from a Clock.
 */
describe('lint limits of the layout', () => {
  jest.setTimeout(60_000);
  let linted: Record<keyof typeof PROBES, Message[]>;

  beforeAll(() => {
    const names = Object.keys(PROBES) as (keyof typeof PROBES)[];
    const results = lintAll(names.map((name) => PROBES[name]));
    linted = Object.fromEntries(names.map((name, i) => [name, results[i]])) as typeof linted;
  });

  it('refuses an import that reaches into another module past its index.ts', () => {
    const messages = linted.pastIndex;
    expect(rules(messages)).toEqual(['baton/module-boundaries']);
    expect(messages[0].message).toContain("import from '../task-store'");
  });

  it("accepts the same import through the module's index.ts, and a module's own files", () => {
    expect(linted.throughIndex).toEqual([]);
  });

  it('refuses a path into a library instead of its package name', () => {
    expect(rules(linted.libraryPath)).toEqual(['no-restricted-imports']);
  });

  it('refuses a source file over 400 lines', () => {
    expect(rules(linted.longSource)).toEqual(['max-lines']);
    // Tests are read top to bottom: no limit there.
    expect(linted.longSpec).toEqual([]);
  });

  it("refuses the process's own clock and timers in source files and unit specs, and a bare sleep in any test", () => {
    const raw = ['no-restricted-syntax', 'no-restricted-syntax'];
    expect(rules(linted.rawTimeSource)).toEqual(raw);
    expect(linted.rawTimeSource[0].message).toContain('Date.now()');
    expect(linted.rawTimeSource[1].message).toContain('a raw timer');
    // A unit spec moves a ManualClock ...
    expect(rules(linted.rawTimeSpec)).toEqual(raw);
    expect(rules(linted.rawTimeLibSpec)).toEqual(raw);
    expect(linted.injectedTime).toEqual([]);
    // ... an integration or end-to-end test may read the time and wait for a real server, for
    // a state, through the waits of test/support/processes.ts; a bare sleep it may not.
    expect(rules(linted.rawTimeIntSpec)).toEqual(['no-restricted-syntax']);
    expect(linted.rawTimeIntSpec[0].message).toContain('waits for a state');
    expect(rules(linted.sleepE2e)).toEqual(['no-restricted-syntax']);
    expect(linted.sleepHelper).toEqual([]);
    expect(linted.stateE2e).toEqual([]);
  });
});
