import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Api,
  Backend,
  productionBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually, holds } from './support/processes';

jest.setTimeout(120_000);

interface Attempt {
  attempt: number;
  worker_id: string;
  started_at: string;
  ended_at: string | null;
  outcome: string | null;
}

/**
 * Cancels as a client must: a task being driven at that moment (a poll, a restart) answers 409
 * "changed meanwhile; retry", so the request is sent again until it is taken.
 */
async function cancel(api: Api, id: string): Promise<void> {
  await eventually(
    async () => {
      const res = await api.call('POST', `/v1/tasks/${id}/cancel`);
      if (res.status === 409) return undefined;
      expect(res.status).toBe(200);
      return true;
    },
    10_000,
    `the cancel of ${id} taken`,
  );
}

/**
 * Permanent tasks (repetition=permanent) on MariaDB + Redis: kept alive across the end of every
 * life — a success, a failure past max_retry, a worker killed under it — until cancelled.
 */
describe('permanent tasks on MariaDB + Redis', () => {
  let backend: Backend;
  let dir: string;
  const procs: RunningProcess[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-permanent-'));
    backend = await productionBackend();
  });

  afterEach(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    procs.length = 0;
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const boot = async (id: string): Promise<{ api: Api; url: string }> => {
    const scheduler = await startScheduler(backend, { BATON_INSTANCE_ID: id });
    procs.push(scheduler);
    return { api: new Api(scheduler.url), url: scheduler.url };
  };

  const attempts = async (api: Api, id: string): Promise<Attempt[]> =>
    (await api.call<Attempt[]>('GET', `/v1/tasks/${id}/attempts`)).data;

  it('comes back on another worker instance when its worker is killed, until cancelled', async () => {
    const { api, url } = await boot('perm-kill');
    const victim = await startTemplateWorker('victim', url, join(dir, 'victim.jsonl'));
    await api.waitForWorkers(1);
    const interval = 500;
    expect(
      (
        await api.call('PATCH', '/v1/task-types/demo.sleep', {
          heartbeat_timeout_ms: 4 * interval,
          max_retry: 0,
          backoff_base_ms: 50,
          backoff_max_ms: 200,
        })
      ).status,
    ).toBe(200);
    const id = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'keep me alive' },
      repetition: 'permanent',
      params: { seconds: 3600, tick_ms: interval },
    });
    const first = await api.until(id, 'RUNNING');
    expect(first).toMatchObject({ repetition: 'permanent', restarts: 0, worker_id: 'victim' });

    const survivor = await startTemplateWorker('survivor', url, join(dir, 'survivor.jsonl'));
    procs.push(survivor);
    await api.waitForWorkers(2);
    const killedAt = Date.now();
    await victim.kill9();

    // max_retry is 0: a simple task would end FAIL here; a permanent one starts a new life.
    const back = await eventually(
      async () => {
        const list = await attempts(api, id);
        return list.find((a) => a.worker_id === 'survivor' && a.attempt > 1);
      },
      30_000,
      'a new life on the survivor',
    );
    const after = Date.parse(back.started_at) - killedAt;
    console.log(`permanent task: back on another worker ${after} ms after its worker was killed`);
    const running = await eventually(
      async () => {
        const t = (await api.call<Record<string, unknown>>('GET', `/v1/tasks/${id}`)).data;
        return t.task_status === 'RUNNING' && t.worker_id === 'survivor' ? t : undefined;
      },
      20_000,
      'RUNNING on the survivor',
    );
    expect(running.restarts).toBe(Number(running.attempt) - 1);
    expect(running.restarts).toBeGreaterThanOrEqual(1);
    const list = await attempts(api, id);
    expect(list[0]).toMatchObject({ attempt: 1, worker_id: 'victim', outcome: 'FAIL' });
    expect(list[0].ended_at).not.toBeNull();
    // Its heartbeat still beats on the survivor: the life goes on (no further restart).
    const restarts = running.restarts;
    await holds(
      async () => {
        const t = (await api.call<Record<string, unknown>>('GET', `/v1/tasks/${id}`)).data;
        return t.task_status === 'RUNNING' && t.restarts === restarts && t.worker_id === 'survivor';
      },
      6 * interval,
      'the life on the survivor, with no further restart',
    );

    // Cancelled: the life stops on the worker and no new one starts.
    await cancel(api, id);
    const done = await api.until(id, 'FINISH', 20_000);
    expect(done).toMatchObject({ outcome: 'CANCELLED', restarts });
    await holds(
      async () => (await attempts(api, id)).length === list.length,
      1000,
      'no new life after the cancel',
    );
  });

  it('starts a new life after every success and every failure past max_retry, counting restarts', async () => {
    const { api, url } = await boot('perm-loop');
    procs.push(await startTemplateWorker('w1', url, join(dir, 'w1.jsonl')));
    await api.waitForWorkers(1);
    for (const type of ['demo.echo', 'demo.flaky'])
      expect(
        (
          await api.call('PATCH', `/v1/task-types/${type}`, {
            max_retry: 0,
            backoff_base_ms: 100,
            backoff_max_ms: 200,
          })
        ).status,
      ).toBe(200);

    // A sync life that succeeds at once: SUCCESS, then (cleaned) CREATE again after the backoff.
    const echo = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'heartbeat-like' },
      repetition: 'permanent',
      params: { n: 1 },
    });
    const looped = await eventually(
      async () => {
        const t = (await api.call<Record<string, unknown>>('GET', `/v1/tasks/${echo}`)).data;
        return Number(t.restarts) >= 3 ? t : undefined;
      },
      30_000,
      'three restarts of the echo task',
    );
    expect(looped.task_status).not.toBe('FINISH');
    await cancel(api, echo);
    const stopped = await api.until(echo, 'FINISH', 20_000);
    expect(stopped.outcome).toBe('CANCELLED');
    const seq = await api.sequence(echo);
    // Every life: CREATE RUNNING SUCCESS; the last SUCCESS is cleaned up into FINISH.
    expect(seq.slice(0, 4)).toEqual(['INIT', 'CREATE', 'RUNNING', 'SUCCESS']);
    expect(seq.slice(4, 7)).toEqual(['CREATE', 'RUNNING', 'SUCCESS']);
    expect(seq[seq.length - 1]).toBe('FINISH');
    expect(seq.filter((s) => s === 'FINISH')).toHaveLength(1);
    const lives = (await attempts(api, echo)).length;
    expect(stopped.restarts).toBe(lives - 1);
    expect(lives).toBeGreaterThanOrEqual(4);
    // The restart decisions are in the lifecycle log: one per life that began another, plus the
    // last one when the cancel came while the task waited for its next life.
    const decided = (await api.events(echo)).filter((e) =>
      /permanent task ended \(success\)/.test(e.reason),
    );
    expect(decided.length).toBeGreaterThanOrEqual(lives - 1);
    expect(decided.length).toBeLessThanOrEqual(lives);
    expect(decided.every((e) => e.actor === 'scheduler:perm-loop')).toBe(true);

    // A life that fails is not final for a permanent task (whatever max_retry); and a type that cleans
    // (demo.flaky) is not cleaned between lives: the worker takes the next one from SUCCESS.
    const flaky = await api.create({
      create_info: { task_type: 'demo.flaky', task_name: 'fails twice' },
      repetition: 'permanent',
      params: { fail_times: 2 },
    });
    const recovered = await eventually(
      async () => {
        const list = await attempts(api, flaky);
        return list.filter((a) => a.outcome === 'SUCCESS').length >= 2 ? list : undefined;
      },
      30_000,
      'two successful lives after two failed ones',
    );
    expect(recovered.slice(0, 4).map((a) => a.outcome)).toEqual([
      'FAIL',
      'FAIL',
      'SUCCESS',
      'SUCCESS',
    ]);
    await cancel(api, flaky);
    await api.until(flaky, 'FINISH', 20_000);
  });

  it('refuses a repetition a create cannot ask for, and a timer template that sets one', async () => {
    const { api, url } = await boot('perm-bad');
    procs.push(await startTemplateWorker('w1', url, join(dir, 'w1.jsonl')));
    await api.waitForWorkers(1);
    const before = (await api.call<{ items: unknown[] }>('GET', '/v1/tasks')).data.items.length;
    const bad = await api.call('POST', '/v1/tasks', {
      create_info: { task_type: 'demo.echo', task_name: 'x' },
      repetition: 'timed',
    });
    expect(bad.status).toBe(400);
    expect(bad.code).not.toBe(0);
    expect(bad.message).toMatch(/repetition/);
    const timer = await api.call('POST', '/v1/timers', {
      name: 'bad template',
      schedule: { kind: 'interval', every_ms: 60_000 },
      task: { create_info: { task_type: 'demo.echo', task_name: 'x' }, repetition: 'permanent' },
    });
    expect(timer.status).toBe(400);
    expect(timer.message).toMatch(/repetition/);
    const after = (await api.call<{ items: unknown[] }>('GET', '/v1/tasks')).data.items.length;
    expect(after).toBe(before);
  });
});
