import type { ManualClock } from '@baton/time';
import { Api } from '../support/baton';
import { InProcessBaton, startWithWorker } from '../support/in-process';
import { everySecond } from '../support/producer';

jest.setTimeout(180_000);

const SECOND = 1000;
const MINUTE = 60 * SECOND;
/** BATON_PRODUCER_LEAD_MS's default: an `allow` timer's fire is written this long before its slot. */
const LEAD = 1000;
/** The misfire grace the timers here are given: a slot reached later than this is a misfire. */
const GRACE = 1000;

/** The slots from `from` to `to` (both included), `step` apart. */
const range = (from: number, to: number, step: number): number[] => {
  const out: number[] = [];
  for (let s = from; s <= to; s += step) out.push(s);
  return out;
};

/** Slots as ISO instants: a failure shows times, not epoch milliseconds. */
const iso = (slots: number[]): string[] => slots.map((s) => new Date(s).toISOString());

/**
 * Moves the clock by `ms` in steps: what a step starts (a Producer pass, its task writes) settles
 * before the next step, as it would in the real time the clock stands for.
 */
async function run(clock: ManualClock, ms: number, stepMs = 50): Promise<void> {
  const target = clock.now() + ms;
  while (clock.now() < target) await clock.advance(Math.min(stepMs, target - clock.now()));
}

interface TimerView {
  next_fire_at: string | null;
  fire_count: number;
  misfire_count: number;
}

/**
 * The slots a timer fired, in order, through the API: its fires are the tasks labelled with its
 * id, each keyed `timer:<id>:<slot ms>` and labelled with its `fire_time`.
 */
async function firedSlots(api: Api, timerId: string): Promise<number[]> {
  const slots: number[] = [];
  let cursor: string | null = null;
  do {
    const q = new URLSearchParams({ label: `timer_id:${timerId}`, limit: '500' });
    if (cursor) q.set('cursor', cursor);
    const res = await api.call<{
      items: { labels: Record<string, string>; idempotency_key: string | null }[];
      next_cursor: string | null;
    }>('GET', `/v1/tasks?${q.toString()}`);
    expect(res.status).toBe(200);
    for (const task of res.data.items) {
      const slot = Date.parse(task.labels.fire_time);
      expect(task.idempotency_key).toBe(`timer:${timerId}:${slot}`);
      slots.push(slot);
    }
    cursor = res.data.next_cursor;
  } while (cursor);
  return slots.sort((a, b) => a - b);
}

async function timer(api: Api, timerId: string): Promise<TimerView> {
  const res = await api.call<TimerView>('GET', `/v1/timers/${timerId}`);
  expect(res.status).toBe(200);
  return res.data;
}

/**
 * Misfire policy is a rule of time, not of crashes: proven here on a manual clock, with every
 * scheduler instance down for a while (the app closed, a new one started on the same SQLite file),
 * and no real waiting. (producer-ha.e2e-spec.ts keeps the failovers of real processes.)
 */
describe('the Producer on a ManualClock: misfire policies over an outage of every instance', () => {
  let baton: InProcessBaton;

  beforeEach(async () => {
    // The Producer is the subject: the loops that drive tasks need not turn every 50 ms (each
    // turn is work for every step of the clock across hours of it).
    baton = await startWithWorker({
      BATON_DISPATCH_INTERVAL_MS: '1000',
      BATON_POLL_INTERVAL_MS: '1000',
      BATON_CHECKER_INTERVAL_MS: '1000',
    });
  });

  afterEach(async () => {
    await baton?.stop();
  });

  const create = async (body: Record<string, unknown>): Promise<string> => {
    const res = await baton.api.call<{ timer_id: string }>('POST', '/v1/timers', body);
    expect(res.status).toBe(201);
    return res.data.timer_id;
  };

  it('a */1 s cron down 10 s: fire_all fires each missed slot once, fire_once one, skip none; then every slot once', async () => {
    const { clock, api } = baton;
    // Half past a second: every instant the test stops at is half a second from any slot.
    await clock.advanceTo(Math.ceil(clock.now() / SECOND) * SECOND + SECOND / 2);
    const createdAt = clock.now();
    const mk = (policy: string) =>
      create({
        ...everySecond(`misfire ${policy}`),
        misfire_policy: policy,
        misfire_grace_ms: GRACE,
      });
    const ids = {
      fire_once: await mk('fire_once'),
      fire_all: await mk('fire_all'),
      skip: await mk('skip'),
    };
    const first = createdAt + SECOND / 2;

    await run(clock, 3 * SECOND);
    // Written up to a lead ahead of its slot: the next slot after that is where each stopped.
    const resume = Math.floor((clock.now() + LEAD) / SECOND) * SECOND + SECOND;
    for (const id of Object.values(ids)) {
      expect(iso(await firedSlots(api, id))).toEqual(iso(range(first, resume - SECOND, SECOND)));
      expect((await timer(api, id)).next_fire_at).toBe(new Date(resume).toISOString());
    }

    // The outage: no instance runs for 10 s of clock time (the stop itself takes none).
    const downAt = clock.now();
    await baton.stopScheduler();
    expect(clock.now()).toBe(downAt);
    await clock.advance(10 * SECOND);
    const upAt = clock.now();
    // A small catch-up batch: fire_once must still fire once, not once per batch.
    await baton.startScheduler({ BATON_PRODUCER_MAX_CATCH_UP: '3' });
    // The slots that fell due while nobody ran and were reached past the grace: from the first
    // slot not written before the outage to the last one more than the grace before the restart.
    const lastLate = Math.floor((upAt - GRACE) / SECOND) * SECOND;
    const missed = range(resume, lastLate, SECOND);
    expect(missed).toHaveLength(8);

    await run(clock, 4 * SECOND);
    const last = Math.floor((clock.now() + LEAD) / SECOND) * SECOND;
    const before = range(first, resume - SECOND, SECOND);
    const after = range(lastLate + SECOND, last, SECOND);
    // The first of them fell in the outage too, but is reached within the grace: it just fires.
    expect(after[0]).toBeGreaterThan(upAt - GRACE);
    expect(after[0]).toBeLessThan(upAt);
    expect(last).toBeGreaterThan(upAt + 4 * SECOND);

    const all = await firedSlots(api, ids.fire_all);
    expect(iso(all)).toEqual(iso([...before, ...missed, ...after]));
    expect(await timer(api, ids.fire_all)).toMatchObject({
      fire_count: all.length,
      misfire_count: 0,
    });

    // One fire for the missed slots: the latest of them.
    const once = await firedSlots(api, ids.fire_once);
    expect(iso(once)).toEqual(iso([...before, lastLate, ...after]));
    expect(await timer(api, ids.fire_once)).toMatchObject({
      fire_count: once.length,
      misfire_count: missed.length - 1,
    });

    const skip = await firedSlots(api, ids.skip);
    expect(iso(skip)).toEqual(iso([...before, ...after]));
    expect(await timer(api, ids.skip)).toMatchObject({
      fire_count: skip.length,
      misfire_count: missed.length,
    });
  });

  it('every minute, down 2 hours: fire_all fires the 120 missed slots once each (7 a pass), fire_once one, skip none', async () => {
    const { clock, api } = baton;
    const createdAt = clock.now();
    // An interval anchored half a minute on: every instant the test stops at is half a minute
    // from any slot.
    const anchor = createdAt + 30 * SECOND;
    const mk = (policy: string) =>
      create({
        name: `long outage ${policy}`,
        schedule: { kind: 'interval', every_ms: MINUTE, at: new Date(anchor).toISOString() },
        task: {
          create_info: { task_type: 'demo.echo', task_name: `every minute ${policy}` },
          params: {},
        },
        misfire_policy: policy,
        misfire_grace_ms: GRACE,
      });
    const ids = {
      fire_all: await mk('fire_all'),
      fire_once: await mk('fire_once'),
      skip: await mk('skip'),
    };
    const slot = (k: number): number => anchor + k * MINUTE;

    await run(clock, MINUTE, 250);
    for (const id of Object.values(ids))
      expect(iso(await firedSlots(api, id))).toEqual(iso([slot(0)]));

    const downAt = clock.now();
    await baton.stopScheduler();
    expect(clock.now()).toBe(downAt);
    await clock.advance(120 * MINUTE);
    // BATON_PRODUCER_MAX_CATCH_UP bounds the fires of one pass (default 1000), not of a
    // catch-up: the rest go in the passes after (7 does not divide 120: the last is short).
    await baton.startScheduler({ BATON_PRODUCER_MAX_CATCH_UP: '7' });
    const upAt = clock.now();
    await run(clock, 40 * SECOND, 250);

    // Slots 1..120 fell due while nobody ran, each more than the grace before the restart; 121
    // came half a minute after it, on time.
    expect(slot(120)).toBeLessThan(upAt - GRACE);
    expect(slot(121)).toBe(upAt + 30 * SECOND);
    const missed = range(slot(1), slot(120), MINUTE);
    const all = await firedSlots(api, ids.fire_all);
    expect(iso(all)).toEqual(iso([slot(0), ...missed, slot(121)]));
    expect(new Set(all).size).toBe(all.length);
    expect(await timer(api, ids.fire_all)).toMatchObject({
      fire_count: 122,
      misfire_count: 0,
      next_fire_at: new Date(slot(122)).toISOString(),
    });

    expect(iso(await firedSlots(api, ids.fire_once))).toEqual(iso([slot(0), slot(120), slot(121)]));
    expect(await timer(api, ids.fire_once)).toMatchObject({ fire_count: 3, misfire_count: 119 });

    expect(iso(await firedSlots(api, ids.skip))).toEqual(iso([slot(0), slot(121)]));
    expect(await timer(api, ids.skip)).toMatchObject({ fire_count: 2, misfire_count: 120 });
  });
  it('a timer disabled before its slot withdraws the fire written ahead of it', async () => {
    const { clock, api } = baton;
    const at = clock.now() + 5 * SECOND;
    const id = await create({
      name: 'withdrawn',
      schedule: { kind: 'once', at: new Date(at).toISOString() },
      task: { create_info: { task_type: 'demo.echo', task_name: 'tick' }, params: { x: 1 } },
    });
    // Within the lead of its slot: the fire is written ahead and waits for it.
    await run(clock, 5 * SECOND - LEAD / 2);
    const written = await api.call<{ items: { task_id: string }[] }>(
      'GET',
      `/v1/tasks?label=timer_id:${id}`,
    );
    expect(written.data.items).toHaveLength(1);
    const taskId = written.data.items[0].task_id;
    expect(clock.now()).toBeLessThan(at);
    expect((await api.call('PATCH', `/v1/timers/${id}`, { enabled: false })).status).toBe(200);
    await run(clock, 3 * SECOND);
    const task = (await api.call<Record<string, unknown>>('GET', `/v1/tasks/${taskId}`)).data;
    expect(task).toMatchObject({ outcome: 'CANCELLED', started_at: null });
    expect(await api.sequence(taskId)).not.toContain('RUNNING');
    expect(await firedSlots(api, id)).toEqual([at]);
  });
});
