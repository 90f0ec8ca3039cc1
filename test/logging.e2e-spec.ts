import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { attemptTraceId } from '@baton/task-contract';
import {
  Api,
  Backend,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually } from './support/processes';

jest.setTimeout(120_000);

/** The JSON lines of a process's output (other lines, e.g. a stack, skipped). */
const jsonLines = (out: string): Record<string, unknown>[] =>
  out.split('\n').flatMap((l) => {
    if (!l.startsWith('{')) return [];
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });

/**
 * The scheduler's log is one JSON object a line; a line written while a task is driven names
 * the task, its attempt and the attempt's trace, the trace its calls to the worker carry.
 */
describe('structured logs', () => {
  let backend: Backend;
  let dir: string;
  const procs: RunningProcess[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'baton-logs-'));
    backend = embeddedBackend();
  });

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a line of a task carries its task_id, attempt and trace_id', async () => {
    const scheduler = await startScheduler(backend, {
      BATON_INSTANCE_ID: 'logs-1',
      BATON_LOG_LEVEL: 'debug',
    });
    procs.push(scheduler);
    procs.push(await startTemplateWorker('logs-w1', scheduler.url, join(dir, 'runs.jsonl')));
    const api = new Api(scheduler.url);
    await api.waitForWorkers(1);
    const id = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'logged' },
      params: { n: 1 },
    });
    await api.until(id, 'FINISH', 60_000);

    const lines = await eventually(
      async () => {
        const mine = jsonLines(scheduler.output()).filter((l) => l.task_id === id);
        return mine.some((l) => l.attempt === 1) ? mine : undefined;
      },
      30_000,
      'log lines of the task',
    );
    const first = lines.find((l) => l.attempt === 1)!;
    expect(first).toMatchObject({
      instance: 'logs-1',
      level: 'debug',
      task_id: id,
      attempt: 1,
      trace_id: attemptTraceId(id, 1),
    });
    expect(typeof first.msg).toBe('string');
    expect(typeof first.time).toBe('string');
    // Every line is JSON, the start-up lines included.
    const listening = jsonLines(scheduler.output()).find((l) =>
      String(l.msg).includes('listening on'),
    );
    expect(listening).toMatchObject({ level: 'info', instance: 'logs-1', context: 'Scheduler' });
  });
});
