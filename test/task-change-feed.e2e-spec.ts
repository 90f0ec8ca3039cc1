import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Api,
  Backend,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually, holds } from './support/processes';
import { scrape, total } from './support/metrics-text';

jest.setTimeout(120_000);

/**
 * The durable status-change seam: a scheduler is killed (as by kill -9) right after it committed
 * a task's move to FINISH, before any consumer heard of it. The next scheduler on the same
 * database hands the change to its consumer (the counter of finished tasks), once.
 */
// On the embedded defaults only: MariaDB, Redis and the other lock backends are proven by the
// store, queue and lock conformance suites and the scheduler-flows and crash e2e files.
describe.each([['sqlite + memory + local locks', async () => embeddedBackend()]])(
  'task change feed on %s',
  (_name, makeBackend: () => Promise<Backend>) => {
    let backend: Backend;
    let dir: string;
    const procs: RunningProcess[] = [];

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'baton-change-feed-'));
      backend = await makeBackend();
    });

    afterAll(async () => {
      await Promise.all(procs.map((p) => p.stop()));
      await backend?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    it('a change committed just before a crash still reaches its consumer, once', async () => {
      const doomed = await startScheduler(backend, {
        BATON_INSTANCE_ID: 'feed-doomed',
        BATON_CRASH_AT: 'after-final-transition',
        BATON_WORKER_STALE_MS: '600000',
      });
      procs.push(doomed);
      const worker = await startTemplateWorker('feed-w1', doomed.url, join(dir, 'runs.jsonl'));
      procs.push(worker);
      const doomedApi = new Api(doomed.url);
      await doomedApi.waitForWorkers(1);
      const id = await doomedApi.create({
        create_info: { task_type: 'demo.echo', task_name: 'final move, then a crash' },
        params: { n: 1 },
      });
      await eventually(
        async () => (doomed.proc.signalCode === 'SIGKILL' ? true : undefined),
        30_000,
        'the scheduler dying right after the FINISH write',
      );
      expect(doomed.output()).toContain('crash point after-final-transition');

      const healthy = await startScheduler(backend, { BATON_INSTANCE_ID: 'feed-healthy' });
      procs.push(healthy);
      const api = new Api(healthy.url);
      // The move was committed before the crash: the task is done, nothing was driven again.
      const task = await api.task(id);
      expect(task.task_status).toBe('FINISH');
      // This instance never drove the task: what it counts came to it through the outbox.
      const finished = async (): Promise<number> =>
        total(await scrape(healthy.url), 'baton_tasks_finished_total', {
          task_type: 'demo.echo',
          outcome: 'SUCCESS',
        });
      await eventually(
        async () => ((await finished()) >= 1 ? true : undefined),
        30_000,
        'the finished task counted by the new scheduler',
      );
      // Handed over once: a later pass does not count it again.
      await holds(async () => (await finished()) === 1, 1500, 'the task counted once');
    });
  },
);
