import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Backend, productionBackend } from './support/baton';
import { eventually, steady } from './support/processes';
import { SchedulerGroup, everySecond, fireRows, gaps, timerIdByName } from './support/producer';

jest.setTimeout(240_000);

/**
 * The Producer under failure, on MariaDB + Redis queue + ZooKeeper locks: three schedulers, the
 * owner killed with SIGKILL twice and a fourth joining between, and still every slot of a
 * one-second cron fired exactly once.
 * (producer-ownership.e2e-spec.ts runs the same failover, shorter, on the other shared lock drivers.)
 */
describe('producer HA on MariaDB + Redis + ZooKeeper', () => {
  let backend: Backend;
  let dir: string;
  let database: string;
  let group: SchedulerGroup;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-producer-ha-'));
    backend = await productionBackend();
    database = backend.env.BATON_MYSQL_DATABASE as string;
    Object.assign(backend.env, {
      BATON_LOCK: 'zookeeper',
      BATON_ZOOKEEPER: '127.0.0.1:2181',
      BATON_ZOOKEEPER_ROOT: `/baton-e2e/${randomBytes(4).toString('hex')}`,
      // The default: a shorter session drops a member of a loaded box from the ring now and then.
      BATON_ZOOKEEPER_SESSION_MS: '4000',
      BATON_PRODUCER_LEASE_MS: '2000',
      BATON_WORKER_STALE_MS: '600000',
    });
    group = new SchedulerGroup(backend, join(dir, 'w1.jsonl'));
  });

  afterEach(async () => {
    await group?.stop();
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(['standby', 'distributed'])(
    '%s ownership: a */1 s cron, its owner killed twice and a member joining, fires every slot exactly once',
    async (mode) => {
      const env = { BATON_PRODUCER_MODE: mode };
      const api = await group.start('p1', env);
      await group.start('p2', env);
      await group.start('p3', env);
      // Several timers in distributed mode, so they spread over the members.
      const n = mode === 'distributed' ? 6 : 1;
      const ids: string[] = [];
      /** Each timer's first slot, as it answered when it was made. */
      const firstSlot = new Map<string, number>();
      for (let i = 0; i < n; i++) {
        const res = await api.call<{ timer_id: string; next_fire_at: string }>(
          'POST',
          '/v1/timers',
          everySecond(`ha ${mode} ${i}`),
        );
        expect(res.status).toBe(201);
        ids.push(res.data.timer_id);
        firstSlot.set(res.data.timer_id, Date.parse(res.data.next_fire_at));
      }
      const t0 = Date.now();
      if (mode === 'distributed') {
        // The spread is a final state: members that have just started may not have joined the
        // ring when the timers were made, and take their share when they do.
        await group.membersAgree(60_000);
        await eventually(
          async () => {
            const owners = await group.owners(ids);
            if (new Set(owners.values()).size > 1) return true;
            const views = await Promise.all(
              group.ids().map(async (id) => [id, (await group.status(id)).members]),
            );
            throw new Error(
              `owners ${JSON.stringify([...owners])}; members seen ${JSON.stringify(views)}`,
            );
          },
          60_000,
          'the timers spread over more than one member',
        );
      }
      // The timeline follows the fires, not a clock: each step waits until every timer has had
      // three fires written after the last event, none by an instance killed (its owner then,
      // whatever it is, is at work), so a slow box stretches it and a fast one does not wait for
      // nothing.
      const everyTimerFiredAfter = (mark: number, what: string, dead?: string): Promise<true> =>
        eventually(
          async () => {
            for (const id of ids) {
              const rows = await fireRows(database, id);
              const after = rows.filter((r) => r.createdAt > mark && r.firedBy !== dead);
              if (after.length < 3) return undefined;
            }
            return true;
          },
          60_000,
          `every timer firing three times after ${what}`,
        );
      await everyTimerFiredAfter(t0, 'the start');
      const first = await group.killOwner(ids[0]);
      // A member joins (a new instance, and in standby a new standby).
      await group.start('p4', env);
      // (That a member joining takes its share of the timers, and only that, is
      // producer-ownership.e2e-spec.ts's distributed case.)
      await everyTimerFiredAfter(Date.now(), 'the first kill and the join', first.victim);
      const second = await group.killOwner(ids[0]);
      await everyTimerFiredAfter(Date.now(), 'the second kill', second.victim);
      const liveApi = group.api(group.ids()[0]);
      /** Each timer's next slot just before it was disabled: every slot before it has fired. */
      const nextAtStop = new Map<string, number>();
      for (const id of ids) {
        const t = await liveApi.call<{ next_fire_at: string }>('GET', `/v1/timers/${id}`);
        nextAtStop.set(id, Date.parse(t.data.next_fire_at));
        await liveApi.call('PATCH', `/v1/timers/${id}`, { enabled: false });
      }
      // The passes in flight at the disable end.
      for (const id of ids)
        await steady(async () => (await fireRows(database, id)).length, `timer ${id} settling`);

      const report: string[] = [];
      for (const id of ids) {
        const rows = await fireRows(database, id);
        const slots = rows.map((r) => r.slot);
        // Exactly once: no slot twice (the unique key), none missing between the first and last.
        expect(new Set(slots).size).toBe(slots.length);
        expect(gaps(slots, 1000)).toEqual([]);
        // From its first slot (fire_all: none is dropped, however late the box reached it) to
        // at least the slot before the one it was waiting for when it was disabled.
        expect(slots[0]).toBe(firstSlot.get(id));
        expect(slots[slots.length - 1]).toBeGreaterThanOrEqual(
          (nextAtStop.get(id) as number) - 1000,
        );
        const lateness = rows.map((r) => r.createdAt - r.slot);
        report.push(
          `timer ${id}: ${slots.length} slots, each once, max lateness ${Math.max(...lateness)} ms`,
        );
      }
      console.log(
        `${mode}: failover ${first.failoverMs} ms (killed ${first.victim}), ${second.failoverMs} ms (killed ${second.victim})\n${report.join('\n')}`,
      );
      // How long each failover took is reported, not asserted: a loaded machine stretches it, and
      // the rule it follows (the ZooKeeper session, then a probe) is a matter of configuration.
    },
  );

  it('a crash between a fire and the timer advance fires that slot once, and goes on', async () => {
    let api = await group.start('c1', { BATON_CRASH_AT: 'after-timer-fire' });
    const doomed = group.process('c1');
    // The crash point kills the scheduler right after its first fire, which may come before the
    // create's answer is written: the timer is then found by its name.
    const id = await api
      .call<{ timer_id: string }>('POST', '/v1/timers', everySecond('crash window'))
      .then((res) => res.data.timer_id)
      .catch(async (err: unknown) => {
        const stored = await eventually(
          () => timerIdByName(database, 'crash window'),
          10_000,
          'the timer stored before the crash',
        ).catch(() => undefined);
        if (!stored) throw err;
        return stored;
      });
    await eventually(
      async () => (doomed.proc.signalCode === 'SIGKILL' ? true : undefined),
      10_000,
      'the scheduler dying after its first fire',
    );
    group.forget('c1');
    expect(doomed.output()).toContain('crash point after-timer-fire');
    // Its one pass fired the slots due within the lead: one, or two when the pass ran just past
    // the edge of a second.
    const firstSlots = (await fireRows(database, id)).map((r) => r.slot);
    expect(firstSlots.length).toBeGreaterThanOrEqual(1);
    expect(firstSlots.length).toBeLessThanOrEqual(2);
    // The timer was not advanced: the next owner starts at that same slot.
    api = await group.start('c2');
    // The next owner goes on from the slot the crash left: three fires at least, then stop.
    await eventually(
      async () =>
        (await fireRows(database, id)).length >= firstSlots.length + 3 ? true : undefined,
      30_000,
      'the next owner firing',
    );
    await api.call('PATCH', `/v1/timers/${id}`, { enabled: false });
    // A pass under way when the timer was disabled may still write its fire and then advance the
    // count: read both once they agree (a loaded machine can take a while between the two).
    const { slots, fireCount } = await eventually(
      async () => {
        const rows = (await fireRows(database, id)).map((r) => r.slot);
        const timer = (await api.call<{ fire_count: number }>('GET', `/v1/timers/${id}`)).data;
        return timer.fire_count === rows.length
          ? { slots: rows, fireCount: timer.fire_count }
          : undefined;
      },
      15_000,
      'the fire count matching the fires written',
    ).catch(async (err: unknown) => {
      const rows = await fireRows(database, id);
      const timer = (await api.call<{ fire_count: number }>('GET', `/v1/timers/${id}`)).data;
      throw new Error(`${String(err)}: ${rows.length} fires, fire_count ${timer.fire_count}`);
    });
    expect(slots.slice(0, firstSlots.length)).toEqual(firstSlots);
    expect(new Set(slots).size).toBe(slots.length);
    expect(gaps(slots, 1000)).toEqual([]);
    expect(slots.length).toBeGreaterThanOrEqual(3);
    expect(fireCount).toBe(slots.length);
  });

  // Misfire policies after an outage of every instance: test/in-process/producer.int-spec.ts.
});
