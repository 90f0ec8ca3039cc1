import { Api } from '../support/baton';
import { InProcessBaton, startInProcess } from '../support/in-process';
import { Waits, manualTime } from '../support/waits';

/** Waits for end states, in clock time. */
const SETTLE_MS = 120_000;

/**
 * A worker that never comes back (closed for good while its task runs): its type says what the
 * attempt comes to. `fail` (the default) fails it by the heartbeat timeout; `recover` runs it
 * again on another worker, not counted against max_retry. Scheduler and template workers in one
 * process on a ManualClock.
 */
describe('a worker that never comes back', () => {
  let baton: InProcessBaton;
  let waits: Waits;
  let api: Api;
  let next = 0;

  beforeAll(async () => {
    baton = await startInProcess();
    waits = manualTime(baton.clock);
    api = baton.api;
  });

  afterAll(async () => {
    await baton?.stop();
  });

  /** A demo.sleep task running on a worker of its own, which is then closed for good. */
  const lostRun = async (name: string, policy: Record<string, unknown>): Promise<string> => {
    const doomed = `lost-${++next}`;
    await baton.addWorker(doomed);
    // The type exists once a worker declared it.
    const patched = await api.call('PATCH', '/v1/task-types/demo.sleep', policy);
    expect(patched.status).toBe(200);
    const id = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: name },
      params: { seconds: 20, tick_ms: 500 },
      process_arg: { max_retry: 0 },
      // Only the doomed worker is up now: the first attempt is its.
    });
    const running = await waits.eventually(
      async () => {
        const t = await api.task(id);
        return t.task_status === 'RUNNING' ? t : undefined;
      },
      SETTLE_MS,
      `${name} running`,
    );
    expect(running.worker_id).toBe(doomed);
    await baton.removeWorker(doomed);
    return id;
  };
  const finished = (id: string) =>
    waits.eventually(
      async () => {
        const t = await api.task(id);
        return t.task_status === 'FINISH' ? t : undefined;
      },
      SETTLE_MS,
      `task ${id} finished`,
    );

  it('fails the attempt by its heartbeat timeout by default: the work may still run where no one sees', async () => {
    const id = await lostRun('lost, failed', { heartbeat_timeout_ms: 3000 });
    const type = await api.call<{ on_worker_lost: string }>('GET', '/v1/task-types/demo.sleep');
    expect(type.data.on_worker_lost).toBe('fail');
    const done = await finished(id);
    expect(done).toMatchObject({ outcome: 'FAIL', attempt: 1 });
    expect((done.error as { code: string }).code).toBe('heartbeat_timeout');
  });

  it('recovers it on another worker when its type says the work is safe to run again', async () => {
    const id = await lostRun('lost, recovered', { on_worker_lost: 'recover' });
    // The fleet's other worker, up once the first is gone.
    await baton.addWorker('survivor');
    const done = await finished(id);
    expect(done).toMatchObject({ outcome: 'SUCCESS', attempt: 2, worker_id: 'survivor' });
    const events = await api.events(id);
    const lost = events.find((e) => e.to === 'FAIL');
    expect(lost?.reason).toMatch(/unreachable for \d+ ms .*on_worker_lost: recover.*not counted/);
    // A bad value is refused and changes nothing.
    const bad = await api.call('PATCH', '/v1/task-types/demo.sleep', { on_worker_lost: 'retry' });
    expect([bad.status, bad.code]).toEqual([400, 40000]);
    const type = await api.call<{ on_worker_lost: string }>('GET', '/v1/task-types/demo.sleep');
    expect(type.data.on_worker_lost).toBe('recover');
  });
});
