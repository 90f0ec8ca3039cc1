import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findOverlaps, readRunLogs } from '../apps/worker-template/src/run-log/run-log-analysis';
import {
  Api,
  Backend,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually } from './support/processes';

jest.setTimeout(180_000);

type Json = Record<string, unknown>;

/**
 * A finished task is not a dead end: a person re-runs it (same id, attempt + 1, a new fence, its
 * history kept) or rolls it back (the worker's rollback, then FINISH again with outcome ROLLBACK).
 */
// On the embedded defaults only: MariaDB, Redis and the other lock backends are proven by the
// store, queue and lock conformance suites and the scheduler-flows and crash e2e files.
describe.each([['sqlite + memory + local locks', async () => embeddedBackend()]])(
  're-runs and late rollbacks on %s',
  (_name, makeBackend: () => Promise<Backend>) => {
    let backend: Backend;
    let dir: string;
    let runLog: string;
    let rollbackDir: string;
    let scheduler: RunningProcess;
    let worker: RunningProcess;
    let api: Api;

    beforeAll(async () => {
      backend = await makeBackend();
      dir = mkdtempSync(join(tmpdir(), 'baton-rerun-'));
      runLog = join(dir, 'runs.jsonl');
      rollbackDir = join(dir, 'rollback');
      scheduler = await startScheduler(backend, { BATON_INSTANCE_ID: 'rerun-1' });
      worker = await startTemplateWorker('rerun-w1', scheduler.url, runLog, {
        WORKER_ROLLBACK_DIR: rollbackDir,
      });
      api = new Api(scheduler.url);
      await api.waitForWorkers(1);
    });

    afterAll(async () => {
      await worker?.stop();
      await scheduler?.stop();
      await backend?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    const runsOf = (id: string) => readRunLogs([runLog]).filter((r) => r.task_id === id);
    const fenceOf = async (id: string) => Number((await api.task(id)).fence);

    it('re-runs a failed task: the worker sees a higher attempt and fence, and it succeeds', async () => {
      // demo.flaky fails its first attempt; with no retries the task FINISHes as failed.
      const id = await api.create({
        create_info: { task_type: 'demo.flaky', task_name: 'rerun failed' },
        params: { fail_times: 1 },
        process_arg: { max_retry: 0 },
      });
      const failed = await api.until(id);
      expect([failed.outcome, failed.attempt]).toEqual(['FAIL', 1]);
      const fence1 = await fenceOf(id);
      const r = await api.call<Json>('POST', `/v1/tasks/${id}/rerun`);
      expect(r.status).toBe(200);
      const done = await eventually(
        async () => {
          const t = await api.task(id);
          return t.task_status === 'FINISH' && t.attempt === 2 ? t : undefined;
        },
        30_000,
        'the re-run finishing',
      );
      expect(done.outcome).toBe('SUCCESS');
      expect(await fenceOf(id)).toBeGreaterThan(fence1);
      expect(runsOf(id).map((x) => x.attempt)).toEqual([1, 2]);
      const seq = await api.sequence(id);
      expect(seq.slice(seq.indexOf('FINISH'))).toEqual([
        'FINISH',
        'CREATE',
        'RUNNING',
        'SUCCESS',
        'FINISH',
      ]);
    });

    it('re-runs a succeeded task with new params', async () => {
      const id = await api.create({
        create_info: { task_type: 'demo.echo', task_name: 'rerun succeeded' },
        params: { n: 1 },
      });
      await api.until(id);
      const r = await api.call('POST', `/v1/tasks/${id}/rerun`, { params: { n: 2 } });
      expect(r.status).toBe(200);
      const done = await eventually(
        async () => {
          const t = await api.task(id);
          return t.task_status === 'FINISH' && t.attempt === 2 ? t : undefined;
        },
        30_000,
        'the re-run finishing',
      );
      expect(done.result).toEqual({ echo: { n: 2 } });
      expect(runsOf(id).map((x) => x.attempt)).toEqual([1, 2]);
    });

    it('waits for its lock keys like any start', async () => {
      const key = `rerun-key-${Date.now()}`;
      const first = await api.create({
        create_info: { task_type: 'demo.echo', task_name: 'keyed' },
        lock_keys: [key],
        process_arg: { lock_timeout: 30 },
      });
      await api.until(first);
      const holder = await api.create({
        create_info: { task_type: 'demo.sleep', task_name: 'holder' },
        params: { seconds: 2, tick_ms: 100 },
        lock_keys: [key],
      });
      await api.until(holder, 'RUNNING');
      expect((await api.call('POST', `/v1/tasks/${first}/rerun`)).status).toBe(200);
      await eventually(
        async () =>
          (await api.task(first)).attempt === 2 && (await api.task(first)).task_status === 'FINISH'
            ? true
            : undefined,
        30_000,
        'the keyed re-run finishing',
      );
      const [h] = runsOf(holder);
      const again = runsOf(first).find((x) => x.attempt === 2);
      expect(again?.start).toBeGreaterThanOrEqual(h.end as number);
      expect(findOverlaps(readRunLogs([runLog]))).toEqual([]);
    });

    it("rolls back a task that finished with SUCCESS through its worker's rollback", async () => {
      const id = await api.create({
        create_info: { task_type: 'demo.rollback', task_name: 'undo me' },
      });
      const t = await api.until(id);
      expect(t.outcome).toBe('SUCCESS');
      const file = join(rollbackDir, `${id}.json`);
      expect(existsSync(file)).toBe(true);
      const r = await api.call('POST', `/v1/tasks/${id}/rollback`);
      expect(r.status).toBe(200);
      const undone = await eventually(
        async () => {
          const x = await api.task(id);
          return x.outcome === 'ROLLBACK' && x.task_status === 'FINISH' ? x : undefined;
        },
        30_000,
        'the late rollback',
      );
      expect(undone.outcome).toBe('ROLLBACK');
      expect(existsSync(file)).toBe(false);
      const seq = await api.sequence(id);
      expect(seq.slice(-3)).toEqual(['FINISH', 'ROLLBACK', 'FINISH']);
      // Rolled back already: not again.
      expect((await api.call('POST', `/v1/tasks/${id}/rollback`)).status).toBe(409);
    });

    it('refuses a re-run of a task that has not finished', async () => {
      const id = await api.create({
        create_info: { task_type: 'demo.sleep', task_name: 'still running' },
        params: { seconds: 3, tick_ms: 100 },
      });
      await api.until(id, 'RUNNING');
      const r = await api.call('POST', `/v1/tasks/${id}/rerun`);
      expect([r.status, r.code]).toEqual([409, 40900]);
      await api.until(id);
    });
  },
);
