import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { Api } from './support/baton';
import { ROOT, eventually, freePort } from './support/processes';

jest.setTimeout(180_000);

/** One curl command of the walk, as README.md writes it. */
interface Step {
  /** Where the command stands in the section (to find the words that follow it). */
  at: number;
  method: string;
  path: string;
  body?: unknown;
}

/** The section "A first walk" of README.md. */
function walk(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('## A first walk');
  if (start < 0) throw new Error('README.md has no section "A first walk"');
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

/** Every curl command in the section's bash blocks, continuation lines joined. */
function steps(section: string): Step[] {
  const out: Step[] = [];
  for (const block of section.matchAll(/```bash\n([\s\S]*?)```/g)) {
    const commands = block[1].replace(/\\\n\s*/g, ' ').split('\n');
    for (const command of commands.map((c) => c.trim()).filter((c) => c.startsWith('curl'))) {
      const url = /(?:localhost|127\.0\.0\.1):3000(\S*)/.exec(command);
      if (!url) throw new Error(`a walk command without the scheduler's URL: ${command}`);
      const data = /-d '([^']*)'/.exec(command);
      out.push({
        at: (block.index ?? 0) + block[0].indexOf(command.slice(0, 20)),
        method: /-X\s*([A-Z]+)/.exec(command)?.[1] ?? 'GET',
        path: url[1],
        ...(data ? { body: JSON.parse(data[1]) as unknown } : {}),
      });
    }
  }
  return out;
}

/** The first `A → B → ...` the section writes after `from` and before `to`, as statuses. */
function expectedLog(section: string, from: number, to: number): string[] | undefined {
  const m = /`([A-Z]+(?: → [A-Z]+)+)`/.exec(section.slice(from, to));
  return m?.[1].split(' → ');
}

/**
 * README.md's "A first walk", followed as a new user would: `scripts/start.mjs` (what `npm start`
 * runs after its build), then every curl command of the section in order, checking what the
 * section says the user will see. The requests and the expected logs are read from README.md.
 */
describe('the README walkthrough', () => {
  let baton: ChildProcess;
  let output = '';
  let dataDir: string;
  let api: Api;
  const ports = { scheduler: 0, console: 0, worker: 0 };

  beforeAll(async () => {
    ports.scheduler = await freePort();
    ports.console = await freePort();
    ports.worker = await freePort();
    dataDir = mkdtempSync(join(tmpdir(), 'baton-readme-'));
    baton = spawn(process.execPath, [join(ROOT, 'scripts', 'start.mjs')], {
      cwd: ROOT,
      // Its own process group: the three apps are stopped with it, whatever happens.
      detached: true,
      env: {
        ...process.env,
        NO_COLOR: '1',
        SCHEDULER_PORT: String(ports.scheduler),
        CONSOLE_PORT: String(ports.console),
        WORKER_PORT: String(ports.worker),
        BATON_DATA_DIR: dataDir,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    baton.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    baton.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    // README: the first start prints an admin API key, once; every request of the walk uses it.
    const key = await eventually(
      async () => /API key, shown once[^:]*: (baton_\S+)/.exec(output)?.[1],
      60_000,
      'npm start: the first admin API key printed',
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n--- start.mjs output ---\n${output}`);
    });
    // And again once the start-up lines are over, set apart from them: the last lines printed.
    const box = await eventually(
      async () =>
        /={78}\n {2}The first admin API key[^\n]*\n\n {4}(baton_\S+)\n[\s\S]*?={78}\n/.exec(
          output,
        ) ?? undefined,
      60_000,
      'npm start: the key printed again, set apart, at the end of the start-up lines',
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n--- start.mjs output ---\n${output}`);
    });
    expect(box[1]).toBe(key);
    api = new Api(`http://127.0.0.1:${ports.scheduler}`, key);
    // README: the worker registers itself once the scheduler answers.
    await eventually(
      async () => {
        const res = await api.call<{ health: string }[]>('GET', '/v1/workers').catch(() => null);
        return res?.data.some((w) => w.health === 'healthy') ? true : undefined;
      },
      60_000,
      'npm start: scheduler up and the template worker registered',
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n--- start.mjs output ---\n${output}`);
    });
  });

  afterAll(async () => {
    if (baton?.pid && baton.exitCode === null) {
      process.kill(-baton.pid, 'SIGTERM');
      await eventually(
        async () => (baton.exitCode !== null || baton.signalCode !== null ? true : undefined),
        10_000,
        'npm start stopping on SIGTERM',
      ).catch(() => undefined);
      try {
        process.kill(-baton.pid, 'SIGKILL');
      } catch {
        // The group is gone: every app stopped on its own.
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves what the run table promises: Swagger UI, the console, the worker', async () => {
    expect((await request(`http://127.0.0.1:${ports.scheduler}/docs`)).statusCode).toBe(200);
    const consoleHealth = await request(`http://127.0.0.1:${ports.console}/health`);
    expect(consoleHealth.statusCode).toBe(200);
    expect(consoleHealth.headers['x-content-type-options']).toBe('nosniff');
    await consoleHealth.body.dump();
    // The worker's start no longer warns about a scheduler that is still starting.
    expect(output).not.toMatch(/WARN.*registration/);
  });

  it('every request of the walk answers as README.md says, and each task ends as it says', async () => {
    const section = walk();
    const all = steps(section);
    expect(all.filter((s) => s.method === 'POST').length).toBeGreaterThanOrEqual(2);
    let taskId: string | undefined;
    for (const [i, step] of all.entries()) {
      const path = step.path.replace('TASK_ID', taskId ?? 'TASK_ID');
      const res = await api.call<Record<string, unknown>>(
        step.method as 'GET' | 'POST',
        path,
        step.body,
      );
      if (step.method !== 'POST') {
        expect({ path, status: res.status, code: res.code }).toEqual({
          path,
          status: 200,
          code: 0,
        });
        continue;
      }
      // "The answer (201) is the task: its task_id, and task_status INIT."
      expect({ path, status: res.status, status_of_task: res.data.task_status }).toEqual({
        path,
        status: 201,
        status_of_task: 'INIT',
      });
      taskId = String(res.data.task_id);
      const nextPost = all.slice(i + 1).find((s) => s.method === 'POST');
      const log = expectedLog(section, step.at, nextPost?.at ?? section.length);
      if (!log) continue;
      const done = await api.until(taskId, log[log.length - 1], 60_000);
      expect(await api.sequence(taskId)).toEqual(log);
      const outcome = log[log.length - 2];
      if (['SUCCESS', 'FAIL', 'ROLLBACK'].includes(outcome)) expect(done.outcome).toBe(outcome);
      // One attempt per CREATE in the log.
      const attempts = await api.call<unknown[]>('GET', `/v1/tasks/${taskId}/attempts`);
      expect(attempts.data).toHaveLength(log.filter((s) => s === 'CREATE').length);
    }
  });
});
