import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Backend, embeddedBackend, productionBackend } from './support/baton';
import { eventually } from './support/processes';
import { SchedulerGroup, everySecond, fireRows, gaps } from './support/producer';

jest.setTimeout(180_000);

type SharedDriver = 'mysql' | 'redis' | 'etcd';
type Mode = 'standby' | 'distributed';

/** The lock drivers that processes can share, but ZooKeeper, under a namespace of their own per test. */
const LOCK_ENV = {
  // The lease table lives in the test's fresh database.
  mysql: () => ({ BATON_LOCK: 'mysql' }),
  // Under productionBackend's fresh BATON_LOCK_PREFIX.
  redis: () => ({ BATON_LOCK: 'redis' }),
  etcd: (ns: string) => ({
    BATON_LOCK: 'etcd',
    BATON_ETCD: 'http://127.0.0.1:2379',
    BATON_LOCK_PREFIX: `baton-e2e/${ns}/`,
  }),
} satisfies Record<SharedDriver, (ns: string) => NodeJS.ProcessEnv>;

/**
 * Each shared driver is killed over once, and each mode on more than one driver. What differs
 * between drivers (expiry, fences, a lost holder) is the lock conformance suite's subject, run on
 * every driver; what the modes do is the same over any LockProvider. ZooKeeper is the driver of
 * producer-ha.e2e-spec.ts, in both modes and with two kills each.
 */
const CASES: [SharedDriver, Mode][] = [
  ['mysql', 'distributed'],
  ['redis', 'standby'],
  ['etcd', 'standby'],
];

/** The lock servers productionBackend does not check itself. */
const SERVER_PORT: Partial<Record<SharedDriver, number>> = { etcd: 2379 };

/** Fails loudly (never skips) when a lock server a case needs is down. */
function reachable(name: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, timeout: 3000 });
    const fail = (why: string): void => {
      socket.destroy();
      reject(
        new Error(
          `${name} at 127.0.0.1:${port} is not reachable (${why}); start it with \`bash scripts/services.sh\``,
        ),
      );
    };
    socket.once('connect', () => {
      socket.end();
      resolve();
    });
    socket.once('timeout', () => fail('timeout'));
    socket.once('error', (err) => fail(err.message));
  });
}

/**
 * Producer ownership on the lock drivers several processes can share: two schedulers (a third
 * joins in distributed mode) on MariaDB + Redis queue, the owner of a one-second cron killed with
 * SIGKILL, a survivor taking over once the dead owner's lease (2 s) runs out, and every slot from
 * the first fire to the last written exactly once. producer-ha.e2e-spec.ts runs the longer version
 * (two kills and a join, both modes) on ZooKeeper.
 */
describe('producer ownership on the shared lock drivers', () => {
  let backend: Backend;
  let dir: string;
  let group: SchedulerGroup;
  const report: string[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-producer-own-'));
    backend = await productionBackend();
    Object.assign(backend.env, {
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

  afterAll(() => console.log(`producer failover (lease 2000 ms):\n${report.join('\n')}`));

  it.each(CASES)(
    '%s locks, %s: the owner killed, a survivor takes over, every slot fires once',
    async (driver, mode) => {
      const port = SERVER_PORT[driver];
      if (port) await reachable(driver, port);
      Object.assign(backend.env, LOCK_ENV[driver](randomBytes(4).toString('hex')), {
        BATON_PRODUCER_MODE: mode,
      });
      const api = await group.start('a');
      await group.start('b');
      // Distributed: enough timers that both members surely own some (all on one: 2 in 2^12).
      const ids: string[] = [];
      /** Each timer's first slot, as it answered when it was made. */
      const firstSlot = new Map<string, number>();
      for (let i = 0; i < (mode === 'distributed' ? 12 : 1); i++) {
        const res = await api.call<{ timer_id: string; next_fire_at: string }>(
          'POST',
          '/v1/timers',
          everySecond(`${driver} ${mode} ${i}`),
        );
        expect(res.status).toBe(201);
        ids.push(res.data.timer_id);
        firstSlot.set(res.data.timer_id, Date.parse(res.data.next_fire_at));
      }
      if (mode === 'distributed') await group.membersAgree();
      // Distributed: each member owns some once both have applied the membership they agree on
      // (a member's owned list may trail the view it reports by a pass: on a loaded box the first
      // look can find every timer still with the older member).
      if (mode === 'distributed')
        await eventually(
          async () => {
            const o = await group.owners(ids);
            return new Set(o.values()).size === 2 ? o : undefined;
          },
          30_000,
          'both members owning timers',
        );
      else await group.owners(ids);
      await eventually(
        async () => ((await fireRows(group.database, ids[0])).length > 0 ? true : undefined),
        10_000,
        'a fire before the kill',
      );

      const { victim, failoverMs, takenBy } = await group.killOwner(ids[0]);
      const [survivor] = group.ids();
      expect(survivor).not.toBe(victim);
      expect(takenBy).toBe(survivor);
      const taken = await group.owners(ids);
      expect(new Set(taken.values())).toEqual(new Set([survivor]));

      let joined = '';
      let moved: string[] = [];
      let watch: ReturnType<SchedulerGroup['watchOwned']> | undefined;
      if (mode === 'distributed') {
        // A member joins: it takes its share from the survivor, and only that.
        await group.start('c');
        watch = group.watchOwned('c');
        await group.membersAgree();
        const after = await group.owners(ids);
        moved = ids.filter((id) => after.get(id) !== survivor);
        expect(moved.length).toBeGreaterThan(0);
        expect(moved.length).toBeLessThan(ids.length);
        expect(moved.every((id) => after.get(id) === 'c')).toBe(true);
        joined = `, join moved ${moved.length}/${ids.length} timers`;
      }

      // Fires go on after the takeover (and the join): every timer fires a slot after this point,
      // by a live member (waited for, however loaded the box: on a starved one a lease may lapse
      // and a timer move again, which is allowed; each slot once is checked below); then every
      // instance stops.
      const resumedAt = Date.now();
      const live = new Set(group.ids());
      await eventually(
        async () => {
          for (const id of ids) {
            const rows = await fireRows(group.database, id);
            // Written after this point: a fire of a later slot may have been written before it
            // (fires are written a second ahead), by the survivor, for a timer that moved to c.
            if (!rows.some((r) => r.createdAt >= resumedAt && live.has(r.firedBy)))
              return undefined;
          }
          return true;
        },
        180_000,
        'every timer firing after the takeover',
      );
      // What c ever owned, looked at until it stops firing (a timer may move to it and away).
      const everOwnedByC = (await watch?.stop()) ?? new Set<string>();
      await group.stop();
      let fires = 0;
      for (const id of ids) {
        const rows = await fireRows(group.database, id);
        const slots = rows.map((r) => r.slot);
        // Exactly once: no slot twice, none missing between the first and the last.
        expect(new Set(slots).size).toBe(slots.length);
        expect(gaps(slots, 1000)).toEqual([]);
        // From its first slot (fire_all: none is dropped, however late the box reached it).
        expect(slots[0]).toBe(firstSlot.get(id));
        // Fired after the takeover: a fire written since (on a loaded box a late one may be of a
        // slot a moment before it; the slots have no gap either way, above).
        expect(Math.max(...rows.map((r) => r.createdAt))).toBeGreaterThanOrEqual(resumedAt);
        // The joined member fires what moved to it, and nothing it never owned.
        if (moved.includes(id)) expect(rows.some((r) => r.firedBy === 'c')).toBe(true);
        if (rows.some((r) => r.firedBy === 'c'))
          expect([id, everOwnedByC.has(id)]).toEqual([id, true]);
        fires += slots.length;
      }
      const line = `${driver} ${mode}: failover ${failoverMs} ms (killed ${victim})${joined}; ${fires} fires, each slot once`;
      report.push(line);
    },
  );
});

/**
 * Local locks live in one process: a lone embedded instance is the leader (standby) or the sole
 * member (distributed), and owns and fires every timer.
 */
describe('producer ownership on local locks', () => {
  let backend: Backend;
  let dir: string;
  let group: SchedulerGroup;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'baton-producer-local-'));
    backend = embeddedBackend();
    group = new SchedulerGroup(backend, join(dir, 'w1.jsonl'));
  });

  afterEach(async () => {
    await group?.stop();
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(['standby', 'distributed'])(
    '%s: a lone instance owns its timers and fires them',
    async (mode) => {
      const api = await group.start('solo', { BATON_PRODUCER_MODE: mode });
      const created = await api.call<{ timer_id: string }>(
        'POST',
        '/v1/timers',
        everySecond(`local ${mode}`),
      );
      expect(created.status).toBe(201);
      const id = created.data.timer_id;
      expect(await group.status('solo')).toMatchObject({
        active: true,
        members: mode === 'distributed' ? ['solo'] : [],
        owned_timers: [id],
      });
      const slots = await eventually(
        async () => {
          const page = await api.call<{ items: { idempotency_key: string }[] }>(
            'GET',
            `/v1/tasks?label=timer_id:${id}&limit=200`,
          );
          const s = page.data.items.map((t) => Number(t.idempotency_key.split(':')[2]));
          return s.length >= 2 ? s.sort((a, b) => a - b) : undefined;
        },
        10_000,
        'two fires',
      );
      expect(new Set(slots).size).toBe(slots.length);
      expect(gaps(slots, 1000)).toEqual([]);
    },
  );
});
