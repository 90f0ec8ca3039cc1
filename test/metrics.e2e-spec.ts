import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Api,
  Backend,
  embeddedBackend,
  productionBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually } from './support/processes';
import { Sample, scrape, total } from './support/metrics-text';

jest.setTimeout(180_000);

/**
 * `GET /metrics` after a run of tasks says what happened, in numbers that match the run; the
 * backlog gauge (the autoscaling signal) rises while no worker is there and falls when one is.
 */
describe.each([
  ['sqlite + memory queue + local locks', async () => embeddedBackend()],
  ['mariadb + redis queue + redis locks', productionBackend],
])('metrics on %s', (_name, makeBackend: () => Promise<Backend>) => {
  let backend: Backend;
  let dir: string;
  let scheduler: RunningProcess;
  let worker: RunningProcess | undefined;
  let api: Api;
  const procs: RunningProcess[] = [];
  const TASKS = 20;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-metrics-'));
    backend = await makeBackend();
    scheduler = await startScheduler(backend, { BATON_INSTANCE_ID: 'metrics-1' });
    procs.push(scheduler);
    worker = await startTemplateWorker('metrics-w1', scheduler.url, join(dir, 'runs.jsonl'), {
      WORKER_CAPACITY: '16',
    });
    api = new Api(scheduler.url);
    await api.waitForWorkers(1);
  });

  afterAll(async () => {
    await Promise.all([...procs, ...(worker ? [worker] : [])].map((p) => p.stop()));
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The scheduler's page once `ready` holds on it (gauges read from the database are cached). */
  const until = (what: string, ready: (s: Sample[]) => boolean): Promise<Sample[]> =>
    eventually(
      async () => {
        const s = await scrape(scheduler.url);
        return ready(s) ? s : undefined;
      },
      60_000,
      what,
    );

  it('counts the tasks of a run: transitions, statuses, outcomes, timings, calls, locks', async () => {
    const ids: string[] = [];
    for (let i = 0; i < TASKS; i++)
      ids.push(
        await api.create({
          create_info: { task_type: 'demo.echo', task_name: `metrics ${i}` },
          params: { n: i },
          // Half of them take a lock key: the lock metrics have something to show.
          ...(i % 2 === 0 ? { lock_keys: [`metrics-${i}`] } : {}),
        }),
      );
    for (const id of ids) expect((await api.until(id, 'FINISH', 60_000)).outcome).toBe('SUCCESS');

    const s = await until(
      'finished tasks relayed and counted',
      (s) =>
        total(s, 'baton_tasks_finished_total', { task_type: 'demo.echo' }) === TASKS &&
        total(s, 'baton_tasks', { task_type: 'demo.echo', status: 'FINISH' }) === TASKS,
    );
    const echo = { task_type: 'demo.echo' };
    // Every task moved to FINISH once, and was created once (from nothing).
    expect(total(s, 'baton_task_transitions_total', { ...echo, to: 'FINISH' })).toBe(TASKS);
    expect(total(s, 'baton_task_transitions_total', { ...echo, from: '' })).toBe(TASKS);
    expect(total(s, 'baton_tasks_finished_total', { ...echo, outcome: 'SUCCESS' })).toBe(TASKS);
    // Only FINISH is left among the counts of the type: the maintained counts add up.
    expect(total(s, 'baton_tasks', echo)).toBe(TASKS);
    expect(total(s, 'baton_task_start_delay_seconds_count', echo)).toBe(TASKS);
    expect(total(s, 'baton_task_run_duration_seconds_count', { ...echo, outcome: 'SUCCESS' })).toBe(
      TASKS,
    );
    expect(
      total(s, 'baton_worker_call_duration_seconds_count', { outcome: 'ok' }),
    ).toBeGreaterThanOrEqual(TASKS);
    expect(total(s, 'baton_claims_total', { result: 'claimed' })).toBeGreaterThanOrEqual(TASKS);
    expect(
      total(s, 'baton_lock_acquire_seconds_count', { result: 'acquired' }),
    ).toBeGreaterThanOrEqual(TASKS / 2);
    expect(total(s, 'baton_lock_hold_seconds_count')).toBeGreaterThanOrEqual(TASKS / 2);
    expect(total(s, 'baton_workers', { ...echo, health: 'healthy' })).toBe(1);
    expect(s.some((x) => x.name === 'baton_queue_depth' && x.labels.lane === 'main')).toBe(true);
    expect(total(s, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    // No task id is a label anywhere.
    for (const x of s) for (const v of Object.values(x.labels)) expect(ids).not.toContain(v);

    // The worker's own page.
    const w = await scrape(worker!.url);
    expect(total(w, 'baton_worker_capacity')).toBe(16);
    // Each type it serves, idle now.
    expect(
      w.filter((x) => x.name === 'baton_worker_running_tasks').map((x) => x.labels.task_type),
    ).toContain('demo.echo');
    expect(total(w, 'baton_worker_running_tasks')).toBe(0);
    expect(
      total(w, 'baton_worker_request_duration_seconds_count', { outcome: 'ok' }),
    ).toBeGreaterThanOrEqual(TASKS);
  });

  it('shows the backlog rise while no worker serves the type, and fall when one returns', async () => {
    await worker!.stop();
    worker = undefined;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        await api.create({
          create_info: { task_type: 'demo.echo', task_name: `backlog ${i}`, important_level: 7 },
          params: { n: i },
        }),
      );
    const s = await until(
      'the backlog of 5',
      (s) => total(s, 'baton_task_backlog', { task_type: 'demo.echo' }) === 5,
    );
    expect(total(s, 'baton_task_backlog', { task_type: 'demo.echo', priority: '7' })).toBe(5);
    expect(
      total(s, 'baton_task_backlog_oldest_seconds', { task_type: 'demo.echo' }),
    ).toBeGreaterThanOrEqual(0);

    worker = await startTemplateWorker('metrics-w2', scheduler.url, join(dir, 'runs2.jsonl'));
    for (const id of ids) await api.until(id, 'FINISH', 90_000);
    await until(
      'the backlog drained',
      (s) => total(s, 'baton_task_backlog', { task_type: 'demo.echo' }) === 0,
    );
  });
});
