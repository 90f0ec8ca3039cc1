import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findOverlaps, readRunLogs } from '../apps/worker-template/src/run-log/run-log-analysis';
import {
  Api,
  Backend,
  embeddedBackend,
  productionBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually } from './support/processes';

jest.setTimeout(120_000);

/** The worker heartbeats the first (doomed) scheduler only: its registration must not go stale. */
const NEVER_STALE = { BATON_WORKER_STALE_MS: '600000' };

/**
 * A scheduler dies at an exact point of a task's life (BATON_CRASH_AT, as kill -9 would), a second
 * scheduler on the same database takes over: the task ends, and the worker ran it exactly once.
 */
describe.each([
  ['sqlite + memory + local locks', async () => embeddedBackend()],
  ['mariadb + redis queue + redis locks', productionBackend],
])('crash points on %s', (_name, makeBackend: () => Promise<Backend>) => {
  let backend: Backend;
  let dir: string;
  let log: string;
  let worker: RunningProcess;
  const procs: RunningProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-crash-points-'));
    backend = await makeBackend();
    log = join(dir, 'worker.jsonl');
  });

  // Only one scheduler at a time: the next test's doomed one must be the one that takes its task.
  afterEach(async () => {
    await Promise.all(procs.splice(0).map((p) => p.stop()));
  });

  afterAll(async () => {
    await worker?.stop();
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Starts a scheduler armed at `point`, creates one task, waits for the crash, then a healthy scheduler. */
  async function crashThenRecover(
    point: string,
    task: Record<string, unknown>,
  ): Promise<{ api: Api; id: string; healthy: RunningProcess }> {
    const doomed = await startScheduler(backend, {
      BATON_INSTANCE_ID: `doomed-${point}`,
      BATON_CRASH_AT: point,
      ...NEVER_STALE,
    });
    procs.push(doomed);
    if (!worker) {
      worker = await startTemplateWorker('points-w1', doomed.url, log);
    }
    let api = new Api(doomed.url);
    await api.waitForWorkers(1);
    const id = await api.create(task);
    await eventually(
      async () => (doomed.proc.signalCode === 'SIGKILL' ? true : undefined),
      20_000,
      `the scheduler dying at ${point}`,
    );
    expect(doomed.output()).toContain(`crash point ${point}`);
    const healthy = await startScheduler(backend, {
      BATON_INSTANCE_ID: `healthy-${point}`,
      ...NEVER_STALE,
    });
    procs.push(healthy);
    api = new Api(healthy.url);
    return { api, id, healthy };
  }

  const runsOf = (id: string) => readRunLogs([log]).filter((r) => r.task_id === id);

  it('sync task, killed after its RUNNING write and before the run call: run once, then FINISH', async () => {
    const { api, id, healthy } = await crashThenRecover('before-run-call', {
      create_info: { task_type: 'demo.echo', task_name: 'crash before run' },
      params: { n: 1 },
    });
    const done = await api.until(id, 'FINISH', 30_000);
    expect(done.outcome).toBe('SUCCESS');
    expect(done.result).toEqual({ echo: { n: 1 } });
    const events = await api.events(id);
    expect(events.map((e) => e.to)).toEqual(['INIT', 'CREATE', 'RUNNING', 'SUCCESS', 'FINISH']);
    expect(healthy.output()).toMatch(
      new RegExp(`task ${id}: the run call of attempt 1 never reached`),
    );
    // Same attempt throughout: the run was resumed, not retried.
    expect(new Set(events.filter((e) => e.attempt > 0).map((e) => e.attempt))).toEqual(
      new Set([1]),
    );
    expect(runsOf(id)).toHaveLength(1);
  });

  it('sync task, killed after the worker answered and before the outcome was written: not run again', async () => {
    const { api, id } = await crashThenRecover('after-run-call', {
      create_info: { task_type: 'demo.echo', task_name: 'crash after run' },
      params: { n: 2 },
    });
    const done = await api.until(id, 'FINISH', 30_000);
    expect(done.outcome).toBe('SUCCESS');
    expect(done.result).toEqual({ echo: { n: 2 } });
    expect(await api.sequence(id)).toEqual(['INIT', 'CREATE', 'RUNNING', 'SUCCESS', 'FINISH']);
    expect(runsOf(id)).toHaveLength(1);
  });

  it('async task, killed after the worker accepted the run: the new scheduler follows it to FINISH', async () => {
    const { api, id } = await crashThenRecover('after-run-call', {
      create_info: { task_type: 'demo.sleep', task_name: 'crash after async run' },
      params: { ms: 600 },
    });
    const done = await api.until(id, 'FINISH', 30_000);
    expect(done.outcome).toBe('SUCCESS');
    const seq = await api.sequence(id);
    expect(seq[0]).toBe('INIT');
    expect(seq.slice(-2)).toEqual(['SUCCESS', 'FINISH']);
    expect(seq).not.toContain('FAIL');
    expect(runsOf(id)).toHaveLength(1);
  });

  it('a create under Idempotency-Key, killed before its answer was stored, is not made twice', async () => {
    const doomed = await startScheduler(backend, {
      BATON_INSTANCE_ID: 'doomed-idempotency',
      BATON_CRASH_AT: 'after-idempotent-create',
      ...NEVER_STALE,
    });
    procs.push(doomed);
    const label = `idem-${Date.now()}`;
    const body = {
      create_info: { task_type: 'demo.echo', task_name: 'idempotent create' },
      labels: { probe: label },
    };
    const headers = { 'idempotency-key': `crash-${label}` };
    // The process dies after writing the task and before answering: the call fails.
    await expect(new Api(doomed.url).call('POST', '/v1/tasks', body, headers)).rejects.toThrow();
    await eventually(
      async () => (doomed.proc.signalCode === 'SIGKILL' ? true : undefined),
      20_000,
      'the scheduler dying after the create',
    );
    const healthy = await startScheduler(backend, {
      BATON_INSTANCE_ID: 'healthy-idempotency',
      ...NEVER_STALE,
    });
    procs.push(healthy);
    const api = new Api(healthy.url);
    // The client retries on another instance: the record is still in flight (its request died),
    // so after a short wait the request runs again, and finds the task its first run wrote.
    const retried = await api.call<{ task_id: string }>('POST', '/v1/tasks', body, headers);
    expect(retried.status).toBe(200);
    const listed = await api.call<{ items: { task_id: string }[] }>(
      'GET',
      `/v1/tasks?label=probe:${label}`,
    );
    expect(listed.data.items.map((t) => t.task_id)).toEqual([retried.data.task_id]);
    // And the answer is stored now: replayed as is.
    const replay = await api.call<{ task_id: string }>('POST', '/v1/tasks', body, headers);
    expect(replay.data.task_id).toBe(retried.data.task_id);
  });

  it('a lock key stays held by a running task whose scheduler died, after its lease ran out', async () => {
    const first = await startScheduler(backend, { BATON_INSTANCE_ID: 'holder-s1', ...NEVER_STALE });
    procs.push(first);
    const key = `res-${Date.now()}`;
    const a = await new Api(first.url).create({
      create_info: { task_type: 'demo.sleep', task_name: 'holds the key' },
      process_arg: { lock_timeout: 1 },
      // Runs until it is cancelled below, once B has been kept waiting by it.
      params: { seconds: 300, tick_ms: 200 },
      lock_keys: [key],
    });
    await new Api(first.url).until(a, 'RUNNING');
    // The scheduler holding the lease dies; the lease (1 s) runs out while A still runs.
    await first.kill9();
    const second = await startScheduler(backend, {
      BATON_INSTANCE_ID: 'holder-s2',
      ...NEVER_STALE,
    });
    procs.push(second);
    const api = new Api(second.url);
    const b = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'wants the key' },
      process_arg: { lock_timeout: 1 },
      lock_keys: [key],
    });
    // B is told the key is A's (long after A's lease ran out), and waits...
    await eventually(
      async () =>
        (await api.events(b)).some((e) => e.reason.includes(`lock key held by task ${a}`))
          ? true
          : undefined,
      40_000,
      `B waiting on task ${a}`,
    );
    expect((await api.task(b)).task_status).toBe('POSTPONE');
    // ...until A ends: it is cancelled (asked again while a runner holds it for a moment).
    const cancelled = await eventually(async () => {
      const r = await api.call('POST', `/v1/tasks/${a}/cancel`);
      return r.status === 409 && r.code === 40904 ? undefined : r.status;
    });
    expect(cancelled).toBe(200);
    const aDone = await api.until(a, 'FINISH', 40_000);
    const bDone = await api.until(b, 'FINISH', 40_000);
    expect(aDone.outcome).toBe('CANCELLED');
    expect(bDone.outcome).toBe('SUCCESS');
    expect(Date.parse(bDone.started_at as string)).toBeGreaterThanOrEqual(
      Date.parse(aDone.finished_at as string),
    );
    const runs = readRunLogs([log]).filter((r) => r.lock_keys.includes(key));
    expect(runs).toHaveLength(2);
    expect(findOverlaps(runs)).toEqual([]);
  });

  it('ran no task twice at the same time', () => {
    expect(findOverlaps(readRunLogs([log]))).toEqual([]);
  });
});
