import { InProcessBaton, startWithWorker } from '../support/in-process';

jest.setTimeout(120_000);

const SECOND = 1000;

interface RunNow {
  timer_id: string;
  fire_time: string;
  task_id?: string;
  run_id?: string;
  created: boolean;
}

interface TimerView {
  next_fire_at: string | null;
  last_task_id: string | null;
  fire_count: number;
}

/**
 * "Run now" (`POST /v1/timers/{id}/run`): a fire outside the schedule, on a ManualClock. It
 * makes what a slot makes, by the caller, under the overlap policy, once per Idempotency-Key,
 * and leaves the schedule as it was.
 */
describe('a timer run now', () => {
  let baton: InProcessBaton;

  beforeAll(async () => {
    baton = await startWithWorker();
  });

  afterAll(async () => {
    await baton?.stop();
  });

  const create = async (body: Record<string, unknown>): Promise<string> => {
    const res = await baton.api.call<{ timer_id: string }>('POST', '/v1/timers', {
      // A slot a day away: nothing here is a scheduled fire.
      schedule: { kind: 'cron', cron: '0 0 3 * * *', time_zone: 'UTC' },
      ...body,
    });
    expect(res.status).toBe(201);
    return res.data.timer_id;
  };

  const timer = async (id: string): Promise<TimerView> =>
    (await baton.api.call<TimerView>('GET', `/v1/timers/${id}`)).data;

  const finished = (taskId: string): Promise<void> =>
    baton.clock.until(
      async () =>
        (await baton.api.call<{ task_status: string }>('GET', `/v1/tasks/${taskId}`)).data
          .task_status === 'FINISH',
      `task ${taskId} finished`,
    );

  it('creates the fire now, labelled and by the caller; the schedule and its counts stay', async () => {
    const { api } = baton;
    const id = await create({
      name: 'echo now',
      task: { create_info: { task_type: 'demo.echo', task_name: 'tick' }, params: { x: 1 } },
    });
    const before = await timer(id);
    const res = await api.call<RunNow>('POST', `/v1/timers/${id}/run`, undefined, {
      'Idempotency-Key': 'first-press',
    });
    expect(res.status).toBe(201);
    expect(res.data).toMatchObject({ timer_id: id, created: true });
    const taskId = res.data.task_id as string;
    const task = (
      await api.call<{ labels: Record<string, string>; idempotency_key: string }>(
        'GET',
        `/v1/tasks/${taskId}`,
      )
    ).data;
    expect(task.labels).toEqual({
      timer_id: id,
      fire_time: res.data.fire_time,
      manual_fire: 'true',
    });
    expect(task.idempotency_key).toBe(`timer:${id}:now:first-press`);
    await finished(taskId);
    expect((await api.events(taskId))[0].actor).toMatch(/^key:/);
    // Pressed again (a retry of the same request): the same fire, nothing new.
    const again = await api.call<RunNow>('POST', `/v1/timers/${id}/run`, undefined, {
      'Idempotency-Key': 'first-press',
    });
    expect([again.status, again.data.task_id, again.data.created]).toEqual([200, taskId, false]);
    const after = await timer(id);
    expect(after).toMatchObject({
      next_fire_at: before.next_fire_at,
      fire_count: 0,
      last_task_id: taskId,
    });
    const listed = await api.call<{ items: unknown[] }>('GET', `/v1/tasks?label=timer_id:${id}`);
    expect(listed.data.items).toHaveLength(1);
  });

  it('keeps the overlap policy: skip answers 409 while the last fire runs, naming it', async () => {
    const { api, clock } = baton;
    const id = await create({
      name: 'long now',
      overlap_policy: 'skip',
      task: {
        create_info: { task_type: 'demo.sleep', task_name: 'long' },
        params: { seconds: 30 },
      },
    });
    const first = await api.call<RunNow>('POST', `/v1/timers/${id}/run`, undefined, {
      'Idempotency-Key': 'a',
    });
    expect(first.status).toBe(201);
    const taskId = first.data.task_id as string;
    await clock.until(
      async () =>
        (await api.call<{ task_status: string }>('GET', `/v1/tasks/${taskId}`)).data.task_status ===
        'RUNNING',
      'the first fire runs',
    );
    const second = await api.call('POST', `/v1/timers/${id}/run`, undefined, {
      'Idempotency-Key': 'b',
    });
    expect(second.status).toBe(409);
    expect(second.code).toBe(40900);
    expect(second.message).toContain(taskId);
    expect(second.message).toContain('overlap policy is skip');
    // The first request sent again still answers its own fire.
    const repeat = await api.call<RunNow>('POST', `/v1/timers/${id}/run`, undefined, {
      'Idempotency-Key': 'a',
    });
    expect([repeat.status, repeat.data.task_id]).toEqual([200, taskId]);
    // Once it finished, the next press fires.
    await clock.advance(31 * SECOND);
    await finished(taskId);
    const third = await api.call<RunNow>('POST', `/v1/timers/${id}/run`, undefined, {
      'Idempotency-Key': 'c',
    });
    expect(third.status).toBe(201);
    expect(third.data.task_id).not.toBe(taskId);
    // The first request sent again while the third fire runs: still its own fire, no 409.
    const late = await api.call<RunNow>('POST', `/v1/timers/${id}/run`, undefined, {
      'Idempotency-Key': 'a',
    });
    expect([late.status, late.data.task_id, late.data.created]).toEqual([200, taskId, false]);
    expect((await timer(id)).last_task_id).toBe(third.data.task_id);
  });

  it('starts a run of a topology timer, and refuses a bad key or an unknown timer', async () => {
    const { api } = baton;
    const saved = await api.call('POST', '/v1/topologies', {
      name: 'nightly-flow',
      nodes: [{ key: 'echo', task: { create_info: { task_type: 'demo.echo' }, params: {} } }],
    });
    expect(saved.message).toBe('ok');
    const id = await create({
      name: 'flow now',
      topology: { name: 'nightly-flow', deadline_seconds: 600 },
    });
    const res = await api.call<RunNow>('POST', `/v1/timers/${id}/run`);
    expect(res.status).toBe(201);
    const runId = res.data.run_id as string;
    expect(res.data.task_id).toBeUndefined();
    const run = await api.call<{
      labels: Record<string, string>;
      created_at: string;
      deadline_at: string | null;
    }>('GET', `/v1/topology-runs/${runId}`);
    expect(run.status).toBe(200);
    // The timer's deadline for its runs holds for this one.
    expect(run.data.deadline_at).toBe(
      new Date(Date.parse(run.data.created_at) + 600_000).toISOString(),
    );
    expect(run.data.labels).toMatchObject({ timer_id: id, manual_fire: 'true' });
    expect((await timer(id)).last_task_id).toBe(runId);

    const badKey = await api.call('POST', `/v1/timers/${id}/run`, undefined, {
      'Idempotency-Key': 'x'.repeat(101),
    });
    expect([badKey.status, badKey.code]).toEqual([400, 40000]);
    const unknown = await api.call('POST', '/v1/timers/T-none/run');
    expect(unknown.status).toBe(404);
  });
});
