import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { authHeaders } from '@baton/task-contract';
import { findOverlaps, readRunLogs } from '../../apps/worker-template/src/run-log/run-log-analysis';
import { Api, SECRET } from './baton';

const HAPPY = ['INIT', 'CREATE', 'RUNNING', 'SUCCESS', 'FINISH'];

/**
 * A scheduler with two template workers, as the flow cases below need it, on either tier: worker
 * A reports async outcomes by callback, worker B has its callbacks off (the scheduler polls it)
 * and keeps its tasks in memory. `test/scheduler-flows.e2e-spec.ts` runs them against processes
 * on MariaDB + Redis, `test/in-process/scheduler-flows.int-spec.ts` in one process on the
 * embedded defaults and a ManualClock.
 */
export interface FlowBaton {
  readonly api: Api;
  /** The test's own directory: the workers' rollback files are under `rollback/`. */
  readonly dir: string;
  workerUrl(name: 'worker-a' | 'worker-b'): string;
  /** Worker B loses its memory (killed, and started again on its port); answers when it died. */
  restartWorkerB(): Promise<number>;
  /** The workers' run logs (one JSON line per run start and end). */
  runLogs(): string[];
  /** What the scheduler logged. */
  output(): string;
  now(): number;
  /** True on the process tier: time is the box's, and a loaded box may reach a task late. */
  readonly realTime: boolean;
  eventually<T>(probe: () => Promise<T | undefined>, timeoutMs?: number, what?: string): Promise<T>;
  holds(check: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void>;
  until(id: string, status?: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

/**
 * The scheduler's flows over the task contract: sync and async runs, callbacks and polls, retries,
 * pause, continue and cancel, rollback, start times, lock keys, a worker that forgot its task,
 * refusals, idempotency, fences, queue timeouts and start-rate limits. Call inside a describe.
 */
export function schedulerFlowCases(start: () => Promise<FlowBaton>): void {
  let h: FlowBaton;
  let api: Api;
  /** When worker B was killed: its runs without an end line ended then. */
  let killedAt = 0;

  beforeAll(async () => {
    h = await start();
    api = h.api;
    for (const type of ['demo.flaky', 'demo.rollback', 'demo.sleep', 'demo.echo']) {
      const res = await api.call('PATCH', `/v1/task-types/${type}`, {
        backoff_base_ms: 50,
        backoff_max_ms: 200,
        heartbeat_timeout_ms: 1500,
      });
      expect(res.status).toBe(200);
    }
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('runs a sync task: INIT CREATE RUNNING SUCCESS FINISH', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'echo' },
      params: { hello: 'world' },
    });
    const done = await h.until(id);
    expect(done).toMatchObject({
      outcome: 'SUCCESS',
      attempt: 1,
      result: { echo: { hello: 'world' } },
    });
    expect(await api.sequence(id)).toEqual(HAPPY);
    const attempts = (await api.call<{ outcome: string }[]>('GET', `/v1/tasks/${id}/attempts`))
      .data;
    expect(attempts.map((a) => a.outcome)).toEqual(['SUCCESS']);
  });

  it('completes an async task by the worker’s callback', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'cb', http_url: h.workerUrl('worker-a') },
      params: { seconds: 0.4, tick_ms: 100 },
    });
    await h.until(id);
    const events = await api.events(id);
    expect(events.map((e) => e.to)).toEqual(HAPPY);
    expect(events.find((e) => e.to === 'SUCCESS')?.actor).toBe('worker:worker-a');
  });

  it('completes an async task by polling when the worker does not call back', async () => {
    const id = await api.create({
      create_info: {
        task_type: 'demo.sleep',
        task_name: 'poll',
        http_url: h.workerUrl('worker-b'),
      },
      params: { seconds: 0.4, tick_ms: 100 },
    });
    const done = await h.until(id);
    expect(done).toMatchObject({ outcome: 'SUCCESS', result: { slept_ms: 400 } });
    const events = await api.events(id);
    expect(events.map((e) => e.to)).toEqual(HAPPY);
    expect(events.find((e) => e.to === 'SUCCESS')?.actor).toMatch(/^worker:worker-b/);
    expect(events.find((e) => e.to === 'SUCCESS')?.reason).toBe('worker reported success');
  });

  it('retries a failing task with backoff until it succeeds', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.flaky', task_name: 'flaky' },
      process_arg: { max_retry: 2 },
      params: { fail_times: 2 },
    });
    const done = await h.until(id);
    expect(done).toMatchObject({ outcome: 'SUCCESS', attempt: 3 });
    expect(await api.sequence(id)).toEqual([
      'INIT',
      'CREATE',
      'RUNNING',
      'FAIL',
      'CREATE',
      'RUNNING',
      'FAIL',
      'CREATE',
      'RUNNING',
      'SUCCESS',
      'FINISH',
    ]);
  });

  it('gives up after max_retry and finishes failed', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.flaky', task_name: 'hopeless' },
      process_arg: { max_retry: 1 },
      params: { fail_times: 5 },
    });
    const done = await h.until(id);
    expect(done).toMatchObject({ outcome: 'FAIL', attempt: 2 });
    expect(await api.sequence(id)).toEqual([
      'INIT',
      'CREATE',
      'RUNNING',
      'FAIL',
      'CREATE',
      'RUNNING',
      'FAIL',
      'FINISH',
    ]);
  });

  // A run past its deadline: test/in-process/time-skipping.int-spec.ts, on a manual clock.

  it('pauses and continues a running task', async () => {
    const id = await api.create({
      create_info: {
        task_type: 'demo.sleep',
        task_name: 'pausable',
        http_url: h.workerUrl('worker-a'),
      },
      params: { seconds: 1.5, tick_ms: 100 },
    });
    await h.until(id, 'RUNNING');
    const paused = await h.eventually(async () => {
      const r = await api.call('POST', `/v1/tasks/${id}/pause`);
      return r.status === 200 ? r : undefined;
    });
    expect(paused.data).toMatchObject({ task_status: 'PAUSE' });
    await h.holds(async () => (await api.task(id)).task_status === 'PAUSE', 300, 'the task paused');
    // A continue meeting the task while another part of the scheduler holds it is told so
    // (409, busy) and sent again, as the pause was.
    const continued = await h.eventually(async () => {
      const r = await api.call('POST', `/v1/tasks/${id}/continue`);
      return r.status === 409 ? undefined : r;
    });
    expect(continued.status).toBe(200);
    await h.until(id);
    expect(await api.sequence(id)).toEqual([
      'INIT',
      'CREATE',
      'RUNNING',
      'PAUSE',
      'RUNNING',
      'SUCCESS',
      'FINISH',
    ]);
  });

  it('pauses a run its worker paused already (an earlier pause told it, then was not recorded)', async () => {
    const id = await api.create({
      create_info: {
        task_type: 'demo.sleep',
        task_name: 'half paused',
        http_url: h.workerUrl('worker-a'),
      },
      params: { seconds: 60, tick_ms: 100 },
    });
    const running = await h.until(id, 'RUNNING');
    // What a scheduler that died between the two steps of a pause leaves: the worker paused, the
    // row RUNNING. Every pause after that was refused by the worker (409) before.
    const path = `/v1/task/demo.sleep?task_id=${id}&action=pause`;
    const fence = String(running.fence);
    const told = await request(`${h.workerUrl('worker-a')}${path}`, {
      method: 'PUT',
      headers: {
        'content-type': 'application/json',
        'x-baton-fence': fence,
        ...authHeaders(
          { mode: 'hmac', secret: SECRET },
          { method: 'PUT', pathWithQuery: path, fence, body: '{}' },
        ),
      },
      body: '{}',
    });
    expect(told.statusCode).toBe(200);
    await told.body.dump();
    const paused = await h.eventually(async () => {
      const r = await api.call('POST', `/v1/tasks/${id}/pause`);
      if (r.status === 409 && r.code === 40904) return undefined; // a runner's poll, for a moment
      return r;
    });
    expect([paused.status, paused.data]).toEqual([
      200,
      expect.objectContaining({ task_status: 'PAUSE' }),
    ]);
    // A runner may hold the task for a moment (409, 40904): asked again, as the API says.
    const cancelled = await h.eventually(async () => {
      const r = await api.call('POST', `/v1/tasks/${id}/cancel`);
      return r.status === 409 && r.code === 40904 ? undefined : r;
    });
    expect(cancelled.status).toBe(200);
    await h.until(id);
  });

  it('cancels a running task: it ends CANCELLED (not a failure, and filterable) and is not retried', async () => {
    const id = await api.create({
      create_info: {
        task_type: 'demo.sleep',
        task_name: 'cancel',
        http_url: h.workerUrl('worker-a'),
      },
      process_arg: { max_retry: 3 },
      params: { seconds: 30 },
    });
    await h.until(id, 'RUNNING');
    await h.eventually(async () =>
      (await api.call('POST', `/v1/tasks/${id}/cancel`)).status === 200 ? true : undefined,
    );
    const done = await h.until(id);
    expect(done).toMatchObject({ outcome: 'CANCELLED', attempt: 1 });
    expect(await api.sequence(id)).toEqual(['INIT', 'CREATE', 'RUNNING', 'FAIL', 'FINISH']);
    const listed = async (outcome: string): Promise<string[]> =>
      (
        await api.call<{ items: { task_id: string }[] }>(
          'GET',
          `/v1/tasks?task_type=demo.sleep&outcome=${outcome}&limit=500`,
        )
      ).data.items.map((t) => t.task_id);
    expect(await listed('cancelled')).toContain(id);
    expect(await listed('FAIL,SUCCESS')).not.toContain(id);
    expect((await api.call('GET', '/v1/tasks?outcome=LOST')).status).toBe(400);
  });

  it('cancels a sync run while it is driven: answered at once, stopped, not retried', async () => {
    // A sync run holds its claim until the worker answers (here up to 30 s).
    const id = await api.create({
      create_info: {
        task_type: 'demo.flaky',
        task_name: 'cancel sync',
        http_url: h.workerUrl('worker-a'),
      },
      process_arg: { max_retry: 3, deadline_second: 60 },
      params: { fail_times: 0, delay_ms: 30_000 },
    });
    await h.until(id, 'RUNNING');
    const asked = h.now();
    const res = await api.call<{ cancel_requested: boolean; task_status: string }>(
      'POST',
      `/v1/tasks/${id}/cancel`,
    );
    expect(res.status).toBe(200);
    // The worker stops the run at once: its FAIL may be written before the answer is read.
    expect(res.data.cancel_requested).toBe(true);
    expect(['RUNNING', 'FAIL', 'FINISH']).toContain(res.data.task_status);
    const done = await h.until(id, 'FINISH', 10_000);
    expect(h.now() - asked).toBeLessThan(10_000);
    expect(done).toMatchObject({ outcome: 'CANCELLED', attempt: 1 });
    expect(await api.sequence(id)).toEqual(['INIT', 'CREATE', 'RUNNING', 'FAIL', 'FINISH']);
    const events = await api.events(id);
    expect(events.map((e) => e.reason)).toContainEqual(
      expect.stringMatching(/^cancel requested: the worker is told to stop the run/),
    );
    expect(events.map((e) => e.reason)).not.toContainEqual(expect.stringMatching(/; retry \d+ of/));
    // Asked again once it has ended: refused, nothing changes.
    expect((await api.call('POST', `/v1/tasks/${id}/cancel`)).status).toBe(409);
  });

  it('cancels a paused task: its attempt ends with the task', async () => {
    const id = await api.create({
      create_info: {
        task_type: 'demo.sleep',
        task_name: 'paused cancel',
        http_url: h.workerUrl('worker-a'),
      },
      params: { seconds: 30, tick_ms: 100 },
    });
    await h.until(id, 'RUNNING');
    await h.eventually(async () =>
      (await api.call('POST', `/v1/tasks/${id}/pause`)).status === 200 ? true : undefined,
    );
    await h.eventually(async () =>
      (await api.call('POST', `/v1/tasks/${id}/cancel`)).status === 200 ? true : undefined,
    );
    const done = await h.until(id);
    expect(done).toMatchObject({ outcome: 'CANCELLED', attempt: 1 });
    const attempts = (
      await api.call<{ attempt: number; ended_at: string | null; outcome: string | null }[]>(
        'GET',
        `/v1/tasks/${id}/attempts`,
      )
    ).data;
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ attempt: 1, outcome: 'FAIL' });
    expect(attempts[0].ended_at).not.toBeNull();
  });

  it('rolls back a failed task when its type asks for it', async () => {
    expect(
      (await api.call('PATCH', '/v1/task-types/demo.rollback', { rollback_on_fail: true })).status,
    ).toBe(200);
    const id = await api.create({
      create_info: { task_type: 'demo.rollback', task_name: 'rb' },
      process_arg: { max_retry: 0 },
      params: { fail: true },
    });
    const done = await h.until(id);
    expect(done).toMatchObject({ outcome: 'ROLLBACK' });
    expect(await api.sequence(id)).toEqual([
      'INIT',
      'CREATE',
      'RUNNING',
      'FAIL',
      'ROLLBACK',
      'FINISH',
    ]);
    expect(existsSync(join(h.dir, 'rollback', `${id}.json`))).toBe(false);
  });

  it('keeps a task in INIT until its start_time, then runs it', async () => {
    const start = h.now() + 1500;
    const id = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'later' },
      process_arg: { start_time: new Date(start).toISOString() },
    });
    const done = await h.until(id);
    // Nothing happens to it before then: no claim, no POSTPONE, no queue entry.
    expect(await api.sequence(id)).toEqual(['INIT', 'CREATE', 'RUNNING', 'SUCCESS', 'FINISH']);
    expect(Date.parse(done.started_at as string)).toBeGreaterThanOrEqual(start);
  });

  it('postpones a task whose lock key is held, and never runs the two at once', async () => {
    const key = `db-${Date.now()}`;
    const first = await api.create({
      create_info: {
        task_type: 'demo.sleep',
        task_name: 'holder',
        http_url: h.workerUrl('worker-a'),
      },
      lock_keys: [key],
      params: { seconds: 1, tick_ms: 100 },
    });
    await h.until(first, 'RUNNING');
    const second = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'waiter' },
      lock_keys: [key],
    });
    await h.until(second, 'FINISH', 30_000);
    await h.until(first);
    expect(await api.sequence(second)).toEqual([
      'INIT',
      'POSTPONE',
      'CREATE',
      'RUNNING',
      'SUCCESS',
      'FINISH',
    ]);
    const runs = readRunLogs(h.runLogs().filter(existsSync)).filter(
      (r) => r.task_id === first || r.task_id === second,
    );
    expect(runs).toHaveLength(2);
    expect(findOverlaps(runs)).toEqual([]);
  });

  it('creates the task again when the worker forgot it (NONE)', async () => {
    // The worker's restart may take longer than this suite's 1.5 s heartbeat bound on a loaded
    // machine; that would be a heartbeat timeout, not the case under test.
    const patch = (ms: number) =>
      api.call('PATCH', '/v1/task-types/demo.sleep', { heartbeat_timeout_ms: ms });
    expect((await patch(60_000)).status).toBe(200);
    try {
      // Worker B keeps tasks in memory: after a restart it does not know the running task.
      const id = await api.create({
        create_info: {
          task_type: 'demo.sleep',
          task_name: 'forgotten',
          http_url: h.workerUrl('worker-b'),
        },
        params: { seconds: 1.5, tick_ms: 100 },
      });
      await h.until(id, 'RUNNING');
      killedAt = await h.restartWorkerB();
      const done = await h.until(id, 'FINISH', 30_000);
      expect(done).toMatchObject({ outcome: 'SUCCESS', attempt: 2 });
      expect(await api.sequence(id)).toEqual([
        'INIT',
        'CREATE',
        'RUNNING',
        'NONE',
        'CREATE',
        'RUNNING',
        'SUCCESS',
        'FINISH',
      ]);
    } finally {
      await patch(1500);
    }
  });

  it('refuses bad input with a 4xx envelope and writes nothing', async () => {
    const before = (await api.call<{ items: unknown[] }>('GET', '/v1/tasks?limit=500')).data.items
      .length;
    const cases: [unknown, number, number][] = [
      [{ create_info: { task_type: 'demo.nope', task_name: 'x' } }, 400, 40000],
      [
        { create_info: { task_type: 'demo.echo', task_name: 'x', http_url: 'http://10.9.9.9:1' } },
        400,
        40000,
      ],
      [{ create_info: { task_type: 'demo.echo', task_name: 'x' }, surprise: 1 }, 400, 40000],
      [
        { create_info: { task_type: 'demo.echo', task_name: 'x', important_level: 11 } },
        400,
        40000,
      ],
      [
        {
          create_info: { task_type: 'demo.echo', task_name: 'x' },
          process_arg: { task_status: 'RUNNING' },
        },
        400,
        40000,
      ],
    ];
    for (const [body, status, code] of cases) {
      const res = await api.call('POST', '/v1/tasks', body);
      expect([res.status, res.code]).toEqual([status, code]);
    }
    const batch = await api.call('POST', '/v1/tasks/batch', {
      tasks: [
        { create_info: { task_type: 'demo.echo', task_name: 'ok' } },
        { create_info: { task_type: 'demo.nope', task_name: 'bad' } },
      ],
    });
    expect([batch.status, batch.code]).toEqual([400, 40000]);
    expect(batch.message).toContain('tasks[1]');
    const after = (await api.call<{ items: unknown[] }>('GET', '/v1/tasks?limit=500')).data.items
      .length;
    expect(after).toBe(before);
  });

  it('honours Idempotency-Key: a repeat answers 200 with the first task, 422 on another body', async () => {
    const key = `k-${Date.now()}`;
    const body = { create_info: { task_type: 'demo.echo', task_name: 'once' } };
    const first = await api.call<{ task_id: string }>('POST', '/v1/tasks', body, {
      'idempotency-key': key,
    });
    const again = await api.call<{ task_id: string }>('POST', '/v1/tasks', body, {
      'idempotency-key': key,
    });
    // A repeat creates nothing: 200 with the first's task (as under the body's key), not 201.
    expect([first.status, again.status]).toEqual([201, 200]);
    expect(again.data.task_id).toBe(first.data.task_id);
    const byBody = { ...body, idempotency_key: `${key}-body` };
    const b1 = await api.call<{ task_id: string }>('POST', '/v1/tasks', byBody);
    const b2 = await api.call<{ task_id: string }>('POST', '/v1/tasks', byBody);
    expect([b1.status, b2.status, b2.data.task_id]).toEqual([201, 200, b1.data.task_id]);
    const other = await api.call(
      'POST',
      '/v1/tasks',
      { create_info: { task_type: 'demo.echo', task_name: 'other' } },
      { 'idempotency-key': key },
    );
    expect([other.status, other.code]).toEqual([422, 42200]);
  });

  it('refuses a callback with a stale fence or attempt, and an unsigned one', async () => {
    const id = await api.create({
      create_info: {
        task_type: 'demo.sleep',
        task_name: 'fenced',
        http_url: h.workerUrl('worker-b'),
      },
      params: { seconds: 0.5 },
    });
    const running = await h.until(id, 'RUNNING');
    const send = async (fence: number, attempt: number, signed = true) => {
      const path = `/v1/tasks/${id}/notify`;
      const body = JSON.stringify({ attempt, task_status: 'SUCCESS' });
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'x-baton-fence': String(fence),
      };
      if (signed)
        Object.assign(
          headers,
          authHeaders(
            { mode: 'hmac', secret: SECRET },
            { method: 'PUT', pathWithQuery: path, fence: String(fence), body },
          ),
        );
      const res = await request(`${api.base}${path}`, { method: 'PUT', headers, body });
      return { status: res.statusCode, body: (await res.body.json()) as { code: number } };
    };
    const fence = running.fence as number;
    expect(await send(fence, 1, false)).toMatchObject({ status: 401 });
    expect(await send(fence - 1, 1)).toMatchObject({ status: 409, body: { code: 40901 } });
    expect(await send(fence, 2)).toMatchObject({ status: 409, body: { code: 40901 } });
    const done = await h.until(id);
    expect(done).toMatchObject({ outcome: 'SUCCESS' });
  });

  it('fails a task that waits longer than its type’s queue timeout', async () => {
    expect(
      (
        await api.call('PATCH', '/v1/task-types/demo.echo', {
          queue_timeout_ms: 500,
          timeout_policy: { queue: 'fail', heartbeat: 'retry', deadline: 'fail' },
        })
      ).status,
    ).toBe(200);
    try {
      const key = `qt-${Date.now()}`;
      const holder = await api.create({
        create_info: {
          task_type: 'demo.sleep',
          task_name: 'qt-holder',
          http_url: h.workerUrl('worker-a'),
        },
        lock_keys: [key],
        params: { seconds: 2, tick_ms: 100 },
      });
      await h.until(holder, 'RUNNING');
      const waiter = await api.create({
        create_info: { task_type: 'demo.echo', task_name: 'qt-waiter' },
        lock_keys: [key],
      });
      const done = await h.until(waiter);
      expect(done).toMatchObject({ outcome: 'FAIL', attempt: 0, error: { code: 'queue_timeout' } });
      // On the ManualClock the waiter is seen held (POSTPONE) before its timeout strikes; on a
      // loaded box the timeout may strike before the runner first reaches it.
      const seq = await api.sequence(waiter);
      if (h.realTime)
        expect(seq.filter((s) => s !== 'POSTPONE')).toEqual(['INIT', 'FAIL', 'FINISH']);
      else expect(seq).toEqual(['INIT', 'POSTPONE', 'FAIL', 'FINISH']);
      await h.until(holder);
    } finally {
      await api.call('PATCH', '/v1/task-types/demo.echo', { queue_timeout_ms: null });
    }
  });

  it('holds a task type to its start-rate limit, postponing the excess', async () => {
    expect(
      (await api.call('PATCH', '/v1/task-types/demo.flaky', { rate_limit_per_sec: 4 })).status,
    ).toBe(200);
    try {
      const res = await api.call<{ task_id: string }[]>('POST', '/v1/tasks/batch', {
        tasks: Array.from({ length: 12 }, (_, i) => ({
          create_info: { task_type: 'demo.flaky', task_name: `rate ${i}` },
          params: { fail_times: 0 },
        })),
      });
      expect(res.status).toBe(201);
      const starts: number[] = [];
      for (const t of res.data)
        starts.push(Date.parse((await h.until(t.task_id)).started_at as string));
      starts.sort((a, b) => a - b);
      // A burst of 4, then 4 a second: no one-second window holds more than 4 + 4 starts,
      // and the twelfth cannot start before two seconds have passed. Proven on the ManualClock:
      // on a loaded box a start is stamped some time after its token was taken, which moves
      // these spans either way; there the limiter's postponements (below) are the proof.
      if (!h.realTime) {
        for (const s0 of starts)
          expect(starts.filter((s) => s >= s0 && s < s0 + 1000).length).toBeLessThanOrEqual(8);
        expect(starts[11] - starts[0]).toBeGreaterThanOrEqual(1900);
      }
      const postponed = await Promise.all(
        res.data.map(async (t) =>
          (await api.events(t.task_id)).some(
            (e) => e.to === 'POSTPONE' && e.reason.startsWith('rate limit'),
          ),
        ),
      );
      expect(postponed.filter(Boolean).length).toBeGreaterThanOrEqual(8);
    } finally {
      await api.call('PATCH', '/v1/task-types/demo.flaky', { rate_limit_per_sec: null });
    }
  });

  it('a retry that must wait (rate limit) waits in FAIL with a logged reason, not a lapsed claim', async () => {
    expect(
      (await api.call('PATCH', '/v1/task-types/demo.flaky', { rate_limit_per_sec: 1 })).status,
    ).toBe(200);
    try {
      const id = await api.create({
        create_info: { task_type: 'demo.flaky', task_name: 'retry under a rate limit' },
        process_arg: { max_retry: 1 },
        params: { fail_times: 1 },
      });
      const done = await h.until(id, 'FINISH', 20_000);
      expect(done).toMatchObject({ outcome: 'SUCCESS', attempt: 2 });
      expect(await api.sequence(id)).toEqual([
        'INIT',
        'CREATE',
        'RUNNING',
        'FAIL',
        'CREATE',
        'RUNNING',
        'SUCCESS',
        'FINISH',
      ]);
      const events = await api.events(id);
      expect(
        events.some(
          (e) => e.from === 'FAIL' && e.to === 'FAIL' && /waiting: rate limit/.test(e.reason),
        ),
      ).toBe(true);
      // The wait is the limiter's (about a second), not a claim lease running out after a throw.
      const failedAt = Date.parse(
        (await api.call<{ to: string; at: string }[]>('GET', `/v1/tasks/${id}/events`)).data.find(
          (e) => e.to === 'FAIL',
        )?.at as string,
      );
      expect(Date.parse(done.started_at as string) - failedAt).toBeLessThan(3000);
      expect(h.output()).not.toContain(`driving ${id} failed`);
    } finally {
      await api.call('PATCH', '/v1/task-types/demo.flaky', { rate_limit_per_sec: null });
    }
  });

  it('a sync run longer than the queue lease keeps its entry (extended, not requeued)', async () => {
    // The claim lease here is 4 s; this run takes 5.5 s.
    const id = await api.create({
      create_info: { task_type: 'demo.flaky', task_name: 'long sync run' },
      process_arg: { deadline_second: 30 },
      params: { fail_times: 0, delay_ms: 5500 },
    });
    const done = await h.until(id, 'FINISH', 20_000);
    expect(done).toMatchObject({ outcome: 'SUCCESS', attempt: 1 });
    expect(await api.sequence(id)).toEqual(['INIT', 'CREATE', 'RUNNING', 'SUCCESS', 'FINISH']);
    expect(h.output()).not.toMatch(new RegExp(`whose runner stopped: [^\n]*${id}`));
  });

  it('ran no task twice at the same time on any worker', () => {
    const runs = readRunLogs(h.runLogs().filter(existsSync)).map((r) =>
      r.end === undefined && r.worker_id === 'worker-b' && r.start < killedAt
        ? { ...r, end: killedAt }
        : r,
    );
    expect(runs.length).toBeGreaterThan(10);
    expect(findOverlaps(runs, h.now())).toEqual([]);
  });
}
