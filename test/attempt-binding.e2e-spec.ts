import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskNotFoundError, WorkerClient } from '@baton/task-contract';
import { readRunLogs } from '../apps/worker-template/src/run-log/run-log-analysis';
import {
  Api,
  Backend,
  SECRET,
  embeddedBackend,
  productionBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually, freePort } from './support/processes';

jest.setTimeout(180_000);

interface Attempt {
  attempt: number;
  worker_id: string | null;
  worker_url: string | null;
  outcome: string | null;
  drop: 'pending' | 'done' | null;
}

/** Runs of the task in a worker's run log (none when the worker never wrote one). */
const runsIn = (log: string, id: string) =>
  existsSync(log) ? readRunLogs([log]).filter((r) => r.task_id === id) : [];

const attemptsOf = async (api: Api, id: string): Promise<Attempt[]> =>
  (await api.call<Attempt[]>('GET', `/v1/tasks/${id}/attempts`)).data;

/**
 * One attempt, one worker, known before it is called. A scheduler dies right after a worker
 * accepted a create (as `kill -9` would); that worker dies too. The next scheduler must know where
 * the attempt went, move the task to another worker without spending its retries, and tell the
 * first worker to drop the attempt when it comes back, so no worker keeps a task the scheduler
 * has moved on from. Before attempts were bound first, the first worker kept the task in CREATE
 * with no trace of it in the scheduler's log.
 */
// On the embedded defaults only: MariaDB, Redis and the other lock backends are proven by the
// store, queue and lock conformance suites and the scheduler-flows and crash e2e files.
describe.each([['sqlite + memory + local locks', async () => embeddedBackend()]])(
  'attempt binding on %s',
  (_name, makeBackend: () => Promise<Backend>) => {
    let backend: Backend;
    let dir: string;
    const procs: RunningProcess[] = [];
    const client = new WorkerClient({ auth: { mode: 'hmac', secret: SECRET }, timeoutMs: 5000 });

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'baton-binding-'));
      backend = await makeBackend();
    });

    afterEach(async () => {
      await Promise.all(procs.splice(0).map((p) => p.stop()));
    });

    afterAll(async () => {
      await backend?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    it('a create whose scheduler died is bound to its worker; the task moves on and that worker is told to drop it', async () => {
      const port = await freePort();
      const firstUrl = `http://127.0.0.1:${port}`;
      const first = (schedulerUrl: string): Promise<RunningProcess> =>
        startTemplateWorker('bind-first', schedulerUrl, join(dir, 'first.jsonl'), {
          WORKER_PORT: String(port),
          WORKER_STORE: 'sqlite',
          WORKER_STORE_PATH: join(dir, 'first.sqlite'),
        });
      const doomed = await startScheduler(backend, {
        BATON_INSTANCE_ID: 'bind-doomed',
        BATON_CRASH_AT: 'after-create-call',
      });
      procs.push(doomed);
      let worker = await first(doomed.url);
      procs.push(worker);
      const api0 = new Api(doomed.url);
      await api0.waitForWorkers(1);
      const id = await api0.create({
        create_info: { task_type: 'demo.sleep', task_name: 'bound before called' },
        params: { ms: 200 },
      });
      await eventually(
        async () => (doomed.proc.signalCode === 'SIGKILL' ? true : undefined),
        30_000,
        'the scheduler dying after the create call',
      );
      // The worker holds attempt 1, and so does the scheduler's log, though nothing after the
      // create was written.
      const held = await client.status(firstUrl, 'demo.sleep', id, { fence: 0 });
      expect(held).toMatchObject({ task_status: 'CREATE', attempt: 1 });
      await worker.kill9();

      const healthy = await startScheduler(backend, { BATON_INSTANCE_ID: 'bind-healthy' });
      procs.push(healthy);
      const api = new Api(healthy.url);
      const bound = await attemptsOf(api, id);
      expect(bound[0]).toMatchObject({ attempt: 1, worker_id: 'bind-first', worker_url: firstUrl });
      const other = await startTemplateWorker('bind-other', healthy.url, join(dir, 'other.jsonl'));
      procs.push(other);

      // max_retry is 0: only an attempt that is not counted may follow the first.
      const done = await api.until(id, 'FINISH', 60_000);
      expect(done.outcome).toBe('SUCCESS');
      const attempts = await attemptsOf(api, id);
      const last = attempts[attempts.length - 1];
      expect(last).toMatchObject({ worker_id: 'bind-other', outcome: 'SUCCESS', drop: null });
      expect(attempts[0]).toMatchObject({ attempt: 1, worker_id: 'bind-first', drop: 'pending' });
      expect(runsIn(join(dir, 'other.jsonl'), id)).toHaveLength(1);
      expect(runsIn(join(dir, 'first.jsonl'), id)).toHaveLength(0);

      // The first worker comes back at its address with its store: it is told to drop attempt 1.
      worker = await first(healthy.url);
      procs.push(worker);
      await eventually(
        async () => ((await attemptsOf(api, id))[0].drop === 'done' ? true : undefined),
        60_000,
        'the drop of attempt 1 reaching the first worker',
      );
      const dropped = await client.status(firstUrl, 'demo.sleep', id, { fence: 0 }).catch((e) => {
        if (e instanceof TaskNotFoundError) return undefined;
        throw e;
      });
      expect(dropped).toMatchObject({ task_status: 'FAIL', attempt: 1 });
      expect(runsIn(join(dir, 'first.jsonl'), id)).toHaveLength(0);
    });

    it('a run refused by a killed worker goes to the other worker without spending max_retry', async () => {
      const s = await startScheduler(backend, {
        BATON_INSTANCE_ID: 'refused-s',
        // The killed worker keeps looking healthy for a while: calls to it are refused, not skipped.
        BATON_WORKER_STALE_MS: '600000',
      });
      procs.push(s);
      const api = new Api(s.url);
      const log = join(dir, 'refused.jsonl');
      const doomed = await startTemplateWorker('refused-doomed', s.url, log);
      procs.push(doomed);
      const alive = await startTemplateWorker('refused-alive', s.url, log);
      procs.push(alive);
      await api.waitForWorkers(2);
      await doomed.kill9();
      const ids: string[] = [];
      for (const [type, params] of [
        ['demo.echo', { n: 1 }],
        ['demo.echo', { n: 2 }],
        ['demo.sleep', { ms: 50 }],
        ['demo.sleep', { ms: 50 }],
        ['demo.echo', { n: 3 }],
        ['demo.sleep', { ms: 50 }],
      ] as const)
        ids.push(
          await api.create({
            create_info: { task_type: type, task_name: 'refused elsewhere' },
            params,
            process_arg: { max_retry: 0 },
          }),
        );
      const moved: string[] = [];
      for (const id of ids) {
        const done = await api.until(id, 'FINISH', 60_000);
        expect(done.outcome).toBe('SUCCESS');
        const events = await api.events(id);
        if (events.some((e) => /never reached|ECONNREFUSED/.test(e.reason) && e.to !== 'FINISH'))
          moved.push(id);
        const attempts = await attemptsOf(api, id);
        expect(attempts[attempts.length - 1]).toMatchObject({ worker_id: 'refused-alive' });
      }
      // Picks alternate between the two workers: some went to the killed one first.
      expect(moved.length).toBeGreaterThan(0);
      const runs = readRunLogs([log]).filter((r) => ids.includes(r.task_id));
      expect(new Set(runs.map((r) => r.worker_id))).toEqual(new Set(['refused-alive']));
    });
  },
);

/**
 * A sync run outlives the scheduler that waited on it: its answer has nowhere to go. The worker
 * reports it through the completion callback to another instance instead, so the outcome is known
 * even when the worker itself dies right after. Before, it lived only in the worker's memory: the
 * next scheduler, finding the worker gone, failed a task whose work had succeeded.
 */
describe('a sync outcome whose scheduler died (mariadb + redis)', () => {
  let backend: Backend;
  let dir: string;
  const procs: RunningProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-unanswered-'));
    backend = await productionBackend();
  });

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is reported by the worker to another instance and kept after the worker dies too', async () => {
    // A long claim lease: nothing but the worker's report can tell the second instance in time.
    const lease = { BATON_CLAIM_LEASE_MS: '30000' };
    const s1 = await startScheduler(backend, { BATON_INSTANCE_ID: 'unanswered-1', ...lease });
    procs.push(s1);
    const s2port = await freePort();
    const s2url = `http://127.0.0.1:${s2port}`;
    const log = join(dir, 'w.jsonl');
    const worker = await startTemplateWorker('unanswered-w', `${s1.url},${s2url}`, log);
    procs.push(worker);
    await new Api(s1.url).waitForWorkers(1);
    const id = await new Api(s1.url).create({
      create_info: { task_type: 'demo.flaky', task_name: 'outlives its scheduler' },
      // Long enough to outlast s2's start on a loaded box: s1 must die while the run is under way.
      params: { fail_times: 0, delay_ms: 25_000 },
      process_arg: { max_retry: 0 },
    });
    await eventually(
      async () => (runsIn(log, id).length > 0 ? true : undefined),
      30_000,
      'the run under way',
    );
    const s2 = await startScheduler(backend, {
      BATON_INSTANCE_ID: 'unanswered-2',
      SCHEDULER_PORT: String(s2port),
      ...lease,
    });
    procs.push(s2);
    await s1.kill9();
    // Otherwise s1 took the answer itself and this test would prove nothing.
    expect(runsIn(log, id).some((r) => r.end !== undefined)).toBe(false);
    const api = new Api(s2.url);
    await eventually(
      async () => (runsIn(log, id).some((r) => r.end !== undefined) ? true : undefined),
      60_000,
      'the run ended on the worker',
    );
    // The report comes at once; s1's claim would keep the task from s2 for 30 s without it.
    await eventually(
      async () =>
        ['SUCCESS', 'FINISH'].includes(String((await api.task(id)).task_status)) ? true : undefined,
      15_000,
      'the outcome reported',
    ).catch(() => undefined);
    await worker.kill9();
    // Cleaned up once s1's claim lapses (its lease was 30 s): the outcome stays.
    const done = await api.until(id, 'FINISH', 120_000);
    expect(done.outcome).toBe('SUCCESS');
    expect(runsIn(log, id)).toHaveLength(1);
    expect(runsIn(log, id)[0].outcome).toBe('SUCCESS');
  });
});
