import { InProcessBaton, startWithWorker } from '../support/in-process';

jest.setTimeout(120_000);

/**
 * Rules of time proven on a manual clock, in one process (scheduler and worker on the embedded
 * defaults): a minute of backoff or an hour of deadline costs no waiting, and a loaded machine
 * cannot make them pass or fail.
 */
describe('time, skipped: scheduler and worker in-process on a ManualClock', () => {
  let baton: InProcessBaton;

  beforeAll(async () => {
    baton = await startWithWorker();
  });

  afterAll(async () => {
    await baton?.stop();
  });

  const attemptStarts = async (id: string): Promise<number[]> =>
    (await baton.api.call<{ started_at: string }[]>('GET', `/v1/tasks/${id}/attempts`)).data.map(
      (a) => Date.parse(a.started_at),
    );

  it('a retry waits out its backoff on the clock (a minute long), then succeeds', async () => {
    const res = await baton.api.call('PATCH', '/v1/task-types/demo.flaky', {
      backoff_base_ms: 60_000,
      backoff_max_ms: 60_000,
    });
    expect(res.status).toBe(200);
    const id = await baton.api.create({
      create_info: { task_type: 'demo.flaky', task_name: 'slow retry' },
      process_arg: { max_retry: 1 },
      params: { fail_times: 1 },
    });
    const done = await baton.until(id);
    expect(done).toMatchObject({ outcome: 'SUCCESS', attempt: 2 });
    const [first, second] = await attemptStarts(id);
    // Equal jitter: half the backoff fixed, half random.
    expect(second - first).toBeGreaterThanOrEqual(30_000);
    expect(second - first).toBeLessThan(60_000 + 5_000);
    expect(await baton.api.sequence(id)).toEqual([
      'INIT',
      'CREATE',
      'RUNNING',
      'FAIL',
      'CREATE',
      'RUNNING',
      'SUCCESS',
      'FINISH',
    ]);
  });

  it('an async run past its deadline (two minutes) fails then, not before', async () => {
    const id = await baton.api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'too slow' },
      process_arg: { deadline_second: 120, max_retry: 0 },
      params: { seconds: 3600, tick_ms: 10_000 },
    });
    await baton.until(id, 'RUNNING');
    const started = baton.clock.now();
    await baton.clock.advance(110_000);
    expect((await baton.api.task(id)).task_status).toBe('RUNNING');
    const done = await baton.until(id);
    expect(done).toMatchObject({ outcome: 'FAIL' });
    expect((done.error as { message: string; code: string }).code).toBe('deadline_timeout');
    expect(await baton.api.sequence(id)).toEqual(['INIT', 'CREATE', 'RUNNING', 'FAIL', 'FINISH']);
    const failedAt = Date.parse(done.finished_at as string);
    expect(failedAt - started).toBeGreaterThanOrEqual(120_000);
    expect(failedAt - started).toBeLessThan(130_000);
  });
});
