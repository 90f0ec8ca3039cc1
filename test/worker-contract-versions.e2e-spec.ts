import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { Api, Backend, SECRET, embeddedBackend, startScheduler } from './support/baton';
import { RunningProcess, eventually, freePort, startPythonWorker } from './support/processes';

/**
 * A worker of contract 1.0.0 under today's scheduler, as docs/worker-contract.md says it goes:
 * refused at registration by default (with a message naming both versions, and a metric); taken
 * when the operator lowers BATON_MIN_WORKER_CONTRACT, and then a run lost with its process is
 * failed by the heartbeat timeout, not recovered, since a 1.0.0 worker cannot say it was lost.
 * The worker is the Python example playing 1.0.0 (CONTRACT_VERSION=1.0.0: no contract_version in
 * its registration, no execution_lost in its heartbeats).
 */
describe('a worker of contract 1.0.0 under today’s scheduler', () => {
  const backends: Backend[] = [];
  const procs: RunningProcess[] = [];
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'baton-contract-'));
  });

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    for (const b of backends) await b.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const oldWorker = async (schedulerUrl: string, port: number): Promise<RunningProcess> => {
    const w = await startPythonWorker({
      PORT: String(port),
      AUTH_MODE: 'hmac',
      AUTH_SECRET: SECRET,
      SCHEDULER_URL: schedulerUrl,
      WORKER_ID: 'py-1-0-0',
      STATE_FILE: join(dir, `tasks-${port}.json`),
      HEARTBEAT_MS: '300',
      CONTRACT_VERSION: '1.0.0',
    });
    procs.push(w);
    return w;
  };

  it('is refused by default: its log says why, a metric counts it, and it takes no task', async () => {
    const backend = embeddedBackend();
    backends.push(backend);
    const scheduler = await startScheduler(backend);
    procs.push(scheduler);
    const api = new Api(scheduler.url);
    const worker = await oldWorker(scheduler.url, await freePort());
    await eventually(
      async () =>
        /registration: 409 worker py-1-0-0 speaks worker contract 1\.0\.0 \(its registration names no contract_version.*accepts 1\.1\.0 or later \(BATON_MIN_WORKER_CONTRACT\)/.test(
          worker.output(),
        )
          ? true
          : undefined,
      60_000,
      'the refusal in the worker’s log',
    );
    const workers = await api.call<{ worker_id: string }[]>('GET', '/v1/workers');
    expect(workers.data.map((w) => w.worker_id)).not.toContain('py-1-0-0');
    const metrics = await (await request(`${scheduler.url}/metrics`)).body.text();
    const refused =
      /^baton_worker_registrations_refused_total\{reason="contract_version"\} (\d+)$/m.exec(
        metrics,
      );
    expect(Number(refused?.[1])).toBeGreaterThanOrEqual(1);
  });

  it('is taken when the operator accepts 1.0.0, and a run lost with a kill -9 fails by the heartbeat timeout', async () => {
    const backend = embeddedBackend();
    backends.push(backend);
    const scheduler = await startScheduler(backend, { BATON_MIN_WORKER_CONTRACT: '1.0.0' });
    procs.push(scheduler);
    const api = new Api(scheduler.url);
    const port = await freePort();
    let worker = await oldWorker(scheduler.url, port);
    await api.waitForWorkers(1, 60_000);
    const listed = await api.call<{ worker_id: string; contract_version: string }[]>(
      'GET',
      '/v1/workers',
    );
    expect(listed.data).toEqual([
      expect.objectContaining({ worker_id: 'py-1-0-0', contract_version: '1.0.0' }),
    ]);
    const patched = await api.call('PATCH', '/v1/task-types/py.sleep', {
      heartbeat_timeout_ms: 3000,
    });
    expect(patched.status).toBe(200);
    const id = await api.create({
      create_info: { task_type: 'py.sleep', task_name: 'lost on 1.0.0' },
      process_arg: { max_retry: 0 },
      params: { ms: 60_000, tick_ms: 100 },
    });
    await api.until(id, 'RUNNING', 60_000);
    await worker.kill9();
    worker = await oldWorker(scheduler.url, port);
    const done = await api.until(id, 'FINISH', 120_000);
    // Not recovered (a 1.2.0 worker's run is: test/python-worker.e2e-spec.ts): failed, attempt 1.
    expect(done).toMatchObject({ outcome: 'FAIL', attempt: 1 });
    expect((done.error as { code: string }).code).toBe('heartbeat_timeout');
  });
});
