import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { authHeaders } from '@baton/task-contract';
import { Api, Backend, SECRET, embeddedBackend, startScheduler } from './support/baton';
import {
  RunningProcess,
  eventually,
  freePort,
  holds,
  schedule,
  startPythonWorker,
} from './support/processes';

const HAPPY = ['INIT', 'CREATE', 'RUNNING', 'SUCCESS', 'FINISH'];

/** The part of a registration's answer under test. */
interface Registered {
  timing: {
    heartbeat_interval_ms: number;
    stale_after_ms: number;
    poll_interval_ms: number;
    task_types: {
      task_type: string;
      heartbeat_interval_ms: number;
      heartbeat_timeout_ms: number;
    }[];
  };
}

/**
 * The Python example worker (examples/python-worker, standard library only) under a real
 * scheduler on the embedded backend: sync, async with callbacks, cancel, pause/continue, and a
 * kill -9 in the middle of ten runs. The scheduler polls at its production default (2 s), so the
 * recovery figures are the ones an operator would see.
 */
describe('the Python example worker under a real scheduler (sqlite + memory)', () => {
  let backend: Backend;
  let scheduler: RunningProcess;
  let api: Api;
  let dir: string;
  let port: number;
  let worker: RunningProcess;

  const startWorker = async (): Promise<void> => {
    worker = await startPythonWorker({
      PORT: String(port),
      AUTH_MODE: 'hmac',
      AUTH_SECRET: SECRET,
      SCHEDULER_URL: api.base,
      WORKER_ID: 'py-worker-1',
      STATE_FILE: join(dir, 'tasks.json'),
      HEARTBEAT_MS: '300',
    });
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-python-'));
    backend = embeddedBackend();
    scheduler = await startScheduler(backend, { BATON_POLL_INTERVAL_MS: '2000' });
    api = new Api(scheduler.url);
    port = await freePort();
    await startWorker();
    await api.waitForWorkers(1);
  });

  afterAll(async () => {
    await worker?.stop();
    await scheduler?.stop();
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('registers its types, and a registration is answered with the timing the scheduler applies', async () => {
    const types = (
      await api.call<{ task_type: string; blocking: string; implements: string[] }[]>(
        'GET',
        '/v1/task-types',
      )
    ).data;
    const echo = types.find((t) => t.task_type === 'py.echo');
    const sleepType = types.find((t) => t.task_type === 'py.sleep');
    expect(echo).toMatchObject({ blocking: 'sync' });
    expect(sleepType).toMatchObject({ blocking: 'async' });
    // Pausable while running is declared by `pause`: py.sleep is, py.echo only before its run.
    expect(sleepType?.implements).toContain('pause');
    expect(echo?.implements).not.toContain('pause');
    // Its params schema came with the registration: a bad value is refused before the worker.
    expect(sleepType).toMatchObject({ params_schema: { properties: { ms: { minimum: 0 } } } });
    const refused = await api.call('POST', '/v1/tasks', {
      create_info: { task_type: 'py.sleep', task_name: 'negative' },
      params: { ms: -5 },
    });
    expect([refused.status, refused.data]).toEqual([
      400,
      expect.objectContaining({ errors: [{ pointer: '/params/ms', message: 'must be >= 0' }] }),
    ]);
    // A registration of one more instance with a type of its own (then removed), signed as a
    // worker signs it.
    const body = JSON.stringify({
      worker_id: 'py-timing-probe',
      url: worker.url,
      version: '0.1.0',
      contract_version: '1.2.0',
      capacity: 1,
      task_types: [{ task_type: 'py.timing-probe', blocking: 'async', implements: [] }],
    });
    const call = async (method: 'POST' | 'DELETE', path: string, payload: string) => {
      const res = await request(`${api.base}${path}`, {
        method,
        headers: {
          'x-baton-fence': '0',
          ...(payload ? { 'content-type': 'application/json' } : {}),
          ...authHeaders(
            { mode: 'hmac', secret: SECRET },
            { method, pathWithQuery: path, fence: '0', body: payload },
          ),
        },
        body: payload || undefined,
      });
      return { status: res.statusCode, json: (await res.body.json()) as { data: Registered } };
    };
    const registered = await call('POST', '/v1/workers', body);
    expect(registered.status).toBe(200);
    expect(registered.json.data.timing).toEqual({
      heartbeat_interval_ms: 1000,
      stale_after_ms: 3000,
      poll_interval_ms: 2000,
      task_types: [
        {
          task_type: 'py.timing-probe',
          heartbeat_interval_ms: expect.any(Number),
          heartbeat_timeout_ms: expect.any(Number),
        },
      ],
    });
    const [typeTiming] = registered.json.data.timing.task_types;
    expect(typeTiming.heartbeat_interval_ms).toBe(Math.floor(typeTiming.heartbeat_timeout_ms / 3));
    expect((await call('DELETE', '/v1/workers/py-timing-probe', '')).status).toBe(200);
  });

  it('runs a sync task; a create sent again with its idempotency key answers 200 and the same task', async () => {
    const body = {
      create_info: { task_type: 'py.echo', task_name: 'echo' },
      params: { hello: 'python' },
      idempotency_key: `py-echo-${Date.now()}`,
    };
    const first = await api.call<{ task_id: string }>('POST', '/v1/tasks', body);
    const again = await api.call<{ task_id: string }>('POST', '/v1/tasks', body);
    expect([first.status, again.status]).toEqual([201, 200]);
    expect(again.data.task_id).toBe(first.data.task_id);
    const done = await api.until(first.data.task_id);
    expect(done).toMatchObject({
      outcome: 'SUCCESS',
      attempt: 1,
      result: { echo: { hello: 'python' } },
    });
    expect(await api.sequence(first.data.task_id)).toEqual(HAPPY);
  });

  it('completes an async task by its callback', async () => {
    const id = await api.create({
      create_info: { task_type: 'py.sleep', task_name: 'callback' },
      params: { ms: 300, tick_ms: 50 },
    });
    const done = await api.until(id);
    expect(done).toMatchObject({ outcome: 'SUCCESS', attempt: 1, result: { slept_ms: 300 } });
    expect(await api.sequence(id)).toEqual(HAPPY);
    // The worker's report was taken (accepted), not merely found by a poll.
    await eventually(
      async () =>
        worker.output().includes(`outcome of ${id} attempt 1 reported: accepted`)
          ? true
          : undefined,
      10_000,
      'the completion callback accepted',
    );
    // And its log: every tick, in order, sent before the outcome.
    const log = await api.call<{ items: { seq: number; message: string }[] }>(
      'GET',
      `/v1/tasks/${id}/attempts/1/logs`,
    );
    expect(log.data.items.map((l) => l.message)).toEqual([
      'sleeping 300 ms in ticks of 50 ms',
      ...[50, 100, 150, 200, 250, 300].map((ms) => `slept ${ms} of 300 ms`),
      'done: slept 300 ms',
    ]);
    expect(log.data.items.map((l) => l.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('cancels a running task: CANCELLED, not retried, and no outcome reported for the stop', async () => {
    const id = await api.create({
      create_info: { task_type: 'py.sleep', task_name: 'cancel' },
      process_arg: { max_retry: 3 },
      params: { ms: 60_000 },
    });
    await api.until(id, 'RUNNING');
    await eventually(async () =>
      (await api.call('POST', `/v1/tasks/${id}/cancel`)).status === 200 ? true : undefined,
    );
    const done = await api.until(id);
    expect(done).toMatchObject({ outcome: 'CANCELLED', attempt: 1 });
    expect(await api.sequence(id)).toEqual(['INIT', 'CREATE', 'RUNNING', 'FAIL', 'FINISH']);
    expect(worker.output()).not.toContain(`outcome of ${id}`);
  });

  it('pauses a running task (its run stands still) and continues it to SUCCESS', async () => {
    const id = await api.create({
      create_info: { task_type: 'py.sleep', task_name: 'pause' },
      params: { ms: 1500, tick_ms: 50 },
    });
    await api.until(id, 'RUNNING');
    await eventually(async () => {
      const r = await api.call('POST', `/v1/tasks/${id}/pause`);
      return r.status === 200 ? true : undefined;
    });
    // Paused for longer than the whole run: a run that went on would have ended by now.
    await holds(async () => (await api.task(id)).task_status === 'PAUSE', 2500, 'the task paused');
    await eventually(async () =>
      (await api.call('POST', `/v1/tasks/${id}/continue`)).status === 200 ? true : undefined,
    );
    const done = await api.until(id, 'FINISH', 30_000);
    expect(done).toMatchObject({ outcome: 'SUCCESS', attempt: 1, result: { slept_ms: 1500 } });
  });

  it('survives kill -9 in the middle of ten runs: every task ends SUCCESS with max_retry 0, recovered soon after the restart', async () => {
    // A heartbeat timeout far away: a recovery before it is the crash-recovery rule at work. Up
    // to 300 s in all: ten runs of 4 s, a restart, and their recoveries, on a loaded box.
    expect(
      (await api.call('PATCH', '/v1/task-types/py.sleep', { heartbeat_timeout_ms: 60_000 })).status,
    ).toBe(200);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++)
      ids.push(
        await api.create({
          create_info: { task_type: 'py.sleep', task_name: `crash ${i}` },
          process_arg: { max_retry: 0 },
          params: { ms: 4000, tick_ms: 100 },
        }),
      );
    for (const id of ids) await api.until(id, 'RUNNING', 30_000);
    await worker.kill9();
    // Down for three seconds: the scheduler's calls to it fail meanwhile.
    await schedule().at(3000);
    await startWorker();
    const restartedAt = Date.now();
    const done = await Promise.all(ids.map((id) => api.until(id, 'FINISH', 60_000)));
    const figures: number[] = [];
    for (const [i, id] of ids.entries()) {
      expect(done[i]).toMatchObject({ outcome: 'SUCCESS', attempt: 2, result: { slept_ms: 4000 } });
      const events = (
        await api.call<
          { from: string | null; to: string; reason: string; attempt: number; at: string }[]
        >('GET', `/v1/tasks/${id}/events`)
      ).data;
      expect(events.filter((e) => e.from !== e.to).map((e) => e.to)).toEqual([
        'INIT',
        'CREATE',
        'RUNNING',
        'FAIL',
        'CREATE',
        'RUNNING',
        'SUCCESS',
        'FINISH',
      ]);
      const lost = events.find((e) => e.to === 'FAIL');
      expect(lost?.reason).toMatch(/execution was lost.*not counted against max_retry/);
      const rerun = events.find((e) => e.to === 'RUNNING' && e.attempt === 2);
      figures.push(Date.parse(rerun?.at ?? '') - restartedAt);
    }
    // By the rule (the reason above), not by the 60 s heartbeat timeout: the times are printed.
    const sorted = [...figures].sort((a, b) => a - b);
    process.stdout.write(
      `python worker crash test: attempt 2 running ${sorted[0]}..${sorted[sorted.length - 1]} ms after the restart (median ${sorted[5]} ms)\n`,
    );
  }, 300_000);
});
