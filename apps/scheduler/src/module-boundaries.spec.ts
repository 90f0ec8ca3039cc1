import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');
const ESLINT = join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js');

interface Message {
  ruleId: string | null;
  message: string;
}

/** Lints `code` as if it were the file `path` (nothing is written), with the project's config. */
function lint(path: string, code: string): Message[] {
  const run = spawnSync(
    process.execPath,
    [ESLINT, '--format', 'json', '--stdin', '--stdin-filename', path],
    { cwd: ROOT, input: code, encoding: 'utf8' },
  );
  if (!run.stdout) throw new Error(`eslint printed nothing: ${run.stderr}`);
  return (JSON.parse(run.stdout) as { messages: Message[] }[])[0].messages;
}

const rules = (messages: Message[]) => messages.map((m) => m.ruleId);

/**
 * The layout's limits hold because lint enforces them (eslint.config.mjs): a module is entered only
 * through its index.ts, and no source file grows past 400 lines.
 */
describe('lint limits of the layout', () => {
  jest.setTimeout(60_000);

  it('refuses an import that reaches into another module past its index.ts', () => {
    const messages = lint(
      'apps/scheduler/src/engine/probe.ts',
      "import { TasksRepository } from '../task-store/tasks.repository';\nexport const probe = TasksRepository;\n",
    );
    expect(rules(messages)).toEqual(['baton/module-boundaries']);
    expect(messages[0].message).toContain("import from '../task-store'");
  });

  it("accepts the same import through the module's index.ts, and a module's own files", () => {
    expect(
      lint(
        'apps/scheduler/src/engine/probe.ts',
        "import { TasksRepository } from '../task-store';\nimport { TaskSteps } from './task-steps';\nexport const probe = [TasksRepository, TaskSteps];\n",
      ),
    ).toEqual([]);
  });

  it('refuses a path into a library instead of its package name', () => {
    const messages = lint(
      'apps/scheduler/src/engine/probe.ts',
      "import { WorkerClient } from '@baton/task-contract/client/worker-client';\nexport const probe = WorkerClient;\n",
    );
    expect(rules(messages)).toEqual(['no-restricted-imports']);
  });

  it('refuses a source file over 400 lines', () => {
    const long = Array.from({ length: 401 }, (_, i) => `export const line${i} = ${i};`).join('\n');
    expect(rules(lint('apps/scheduler/src/engine/probe.ts', `${long}\n`))).toEqual(['max-lines']);
    // Tests are read top to bottom: no limit there.
    expect(lint('apps/scheduler/src/engine/probe.spec.ts', `${long}\n`)).toEqual([]);
  });
});
