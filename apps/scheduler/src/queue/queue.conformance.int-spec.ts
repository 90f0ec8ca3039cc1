/**
 * The one conformance suite every queue driver passes, the Redis one against the machine's real
 * server and its real Redis Cluster (CONTRIBUTING.md). Time is passed as `now` instead of slept
 * away.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import Redis, { Cluster } from 'ioredis';
import { RedisQueueDriver } from './drivers/redis.queue.driver';
import { QueueDriverName } from '../config';
import { ClaimedEntry, QueueDriver, QueueEntry } from './queue.driver';
import { QueueErrorCode, QueueException } from './queue.exception';
import { createQueueDriver } from './queue.factory';

const RUN = `baton:test:queue:${process.pid}-${Date.now().toString(36)}`;
const REDIS = {
  host: process.env.REDIS_HOST ?? '127.0.0.1',
  port: Number(process.env.REDIS_PORT ?? 6379),
};
/**
 * The machine's Redis Cluster (scripts/services.sh): 3 masters, 3 replicas. The failover test
 * (test/redis-cluster.e2e-spec.ts) kills one of its masters; both run in one lane, one at a time.
 */
const CLUSTER = (
  process.env.REDIS_CLUSTER_NODES?.split(',') ??
  [7000, 7001, 7002, 7003, 7004, 7005].map((port) => `127.0.0.1:${port}`)
).map((node) => {
  const [host, port] = node.split(':');
  return { host, port: Number(port) };
});
const SHARDS = 4;
/** A fixed clock: every call gets its `now`, so nothing depends on the wall clock. */
const T = 1_700_000_000_000;
const LEASE = 1000;

/** The driver under test, a second driver on its own connection, and a way around both. */
interface Harness {
  driver: QueueDriver;
  /** Another client of the same queue (memory: the same instance; it is in-process). */
  other: QueueDriver;
  /** A fresh driver of the same kind, for tests that close it. */
  fresh(): QueueDriver;
  close(): Promise<void>;
}

/**
 * `redis-peek`: the Redis driver claiming as it does on a Cluster (a peek at every shard, then a
 * claim per shard), on the machine's standalone server, where it would claim in one call.
 * `redis-cluster`: the Redis driver on the Redis Cluster, configured as the scheduler's config
 * makes it (BATON_REDIS_CLUSTER_NODES): its shards live in slots of their own, on several masters.
 */
type Driver = QueueDriverName | 'redis-peek' | 'redis-cluster';

function open(name: Driver, prefix: string): QueueDriver {
  if (name === 'redis-peek')
    return new RedisQueueDriver({ redis: REDIS, prefix, shards: SHARDS, claimInOneTrip: false });
  if (name === 'redis-cluster') {
    const redis = { ...CLUSTER[0], cluster: CLUSTER };
    return createQueueDriver({ driver: 'redis', redis, prefix, shards: SHARDS });
  }
  return name === 'memory'
    ? createQueueDriver({ driver: 'memory' })
    : createQueueDriver({ driver: 'redis', redis: REDIS, prefix, shards: SHARDS });
}

/** The server a driver needs, for the message of a run that cannot reach it. */
function serverOf(name: Driver): string {
  if (name === 'redis-cluster')
    return `the Redis Cluster at ${CLUSTER.map((n) => `${n.host}:${n.port}`).join(', ')}`;
  return `Redis at ${REDIS.host}:${REDIS.port}`;
}

async function openHarness(name: Driver): Promise<Harness> {
  const driver = open(name, RUN);
  const other = name === 'memory' ? driver : open(name, RUN);
  const harness: Harness = {
    driver,
    other,
    fresh: () => open(name, `${RUN}:fresh`),
    close: async () => {
      await driver.close();
      if (other !== driver) await other.close();
    },
  };
  try {
    await driver.size();
  } catch (error) {
    await harness.close();
    // Fail, never skip: a suite that silently skips Redis proves nothing about it.
    throw new Error(
      `${serverOf(name)} is not reachable (${(error as Error).message}): ` +
        'run `bash scripts/services.sh`',
    );
  }
  return harness;
}

const entry = (taskId: string, priority: number, dueAt: number): QueueEntry => ({
  taskId,
  priority,
  dueAt,
});
const ids = (claims: ClaimedEntry[]): string[] => claims.map((c) => c.taskId);

/** The order the contract promises: priority 9 first, then earliest due, then taskId. */
function contractOrder(a: QueueEntry, b: QueueEntry): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (a.dueAt !== b.dueAt) return a.dueAt - b.dueAt;
  return a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0;
}

/** A deterministic pseudo-random sequence, so a failure reproduces. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
}

const DRIVERS: Driver[] = ['memory', 'redis', 'redis-peek', 'redis-cluster'];

describe.each(DRIVERS)('%s queue driver', (name) => {
  let h: Harness;

  beforeAll(async () => {
    h = await openHarness(name);
  });
  afterEach(async () => {
    await h?.driver.clear();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('claims priority 9 before 0, the earliest due first within one, ties by taskId', async () => {
    await h.driver.enqueue([
      entry('a', 0, T - 10),
      entry('b', 9, T - 1),
      entry('e', 9, T - 5),
      entry('c', 9, T - 5),
      entry('d', 5, T - 3),
    ]);
    const claims = await h.driver.claim(10, LEASE, T);
    expect(ids(claims)).toEqual(['c', 'e', 'b', 'd', 'a']);
    expect(claims[0]).toEqual({ taskId: 'c', priority: 9, dueAt: T - 5, leaseUntil: T + LEASE });
  });

  it('keeps the global order batch after batch over many entries', async () => {
    // Enough entries that the Redis driver's shards each hold some of every priority.
    const next = random(42);
    const entries = Array.from({ length: 300 }, (_, i) =>
      entry(`task-${i}`, Math.floor(next() * 10), T - Math.floor(next() * 50)),
    );
    await h.driver.enqueue(entries);
    const claimed: ClaimedEntry[] = [];
    for (;;) {
      const batch = await h.driver.claim(17, LEASE, T);
      if (batch.length === 0) break;
      claimed.push(...batch);
    }
    expect(ids(claimed)).toEqual(ids([...entries].sort(contractOrder) as ClaimedEntry[]));
  });

  it('does not claim an entry before it is due', async () => {
    await h.driver.enqueue([entry('later', 9, T + 1000), entry('now', 0, T)]);
    expect(ids(await h.driver.claim(10, LEASE, T))).toEqual(['now']);
    expect(await h.driver.claim(10, LEASE, T + 999)).toEqual([]);
    expect(ids(await h.driver.claim(10, LEASE, T + 1000))).toEqual(['later']);
  });

  it('claims at most max and moves them from pending to claimed', async () => {
    await h.driver.enqueue(Array.from({ length: 20 }, (_, i) => entry(`m${i}`, i % 10, T)));
    const claims = await h.driver.claim(5, LEASE, T);
    expect(claims).toHaveLength(5);
    expect(claims.every((c) => c.leaseUntil === T + LEASE)).toBe(true);
    expect(await h.driver.size()).toEqual({ pending: 15, claimed: 5 });
    expect(await h.driver.claim(0, LEASE, T)).toEqual([]);
  });

  it('never hands one entry to two concurrent claimers, and together they get all', async () => {
    const total = 1000;
    await h.driver.enqueue(
      Array.from({ length: total }, (_, i) => entry(`c${i}`, i % 10, T - (i % 7))),
    );
    // Ten claimers at once, half on each connection (Redis: two separate clients).
    const claimers = Array.from({ length: 10 }, async (_, k) => {
      const queue = k % 2 === 0 ? h.driver : h.other;
      const mine: string[] = [];
      for (;;) {
        const batch = await queue.claim(37, LEASE, T);
        if (batch.length === 0) return mine;
        mine.push(...ids(batch));
      }
    });
    const all = (await Promise.all(claimers)).flat();
    expect(all).toHaveLength(total);
    expect(new Set(all).size).toBe(total);
    expect(await h.driver.size()).toEqual({ pending: 0, claimed: total });
  });

  it('enqueue is idempotent: no duplicates, the earlier due kept, a new priority moves it', async () => {
    await h.driver.enqueue([entry('x', 3, T + 100), entry('x', 3, T + 100)]);
    await h.driver.enqueue([entry('x', 3, T + 50)]);
    await h.driver.enqueue([entry('x', 3, T + 500)]);
    await h.driver.enqueue([entry('y', 1, T), entry('z', 5, T + 1)]);
    await h.driver.enqueue([entry('y', 9, T + 10)]);
    expect(await h.driver.size()).toEqual({ pending: 3, claimed: 0 });
    const claims = await h.driver.claim(10, LEASE, T + 1000);
    expect(claims.map((c) => [c.taskId, c.priority, c.dueAt])).toEqual([
      ['y', 9, T],
      ['z', 5, T + 1],
      ['x', 3, T + 50],
    ]);
  });

  it('stays correct after many moves between priorities', async () => {
    const n = 1500;
    await h.driver.enqueue(Array.from({ length: n }, (_, i) => entry(`v${i}`, 0, T + i)));
    // Every entry moves twice, leaving (in the memory driver) stale heap nodes to compact.
    await h.driver.enqueue(Array.from({ length: n }, (_, i) => entry(`v${i}`, 4, T + n + i)));
    await h.driver.enqueue(Array.from({ length: n }, (_, i) => entry(`v${i}`, i % 2 ? 8 : 2, T)));
    await h.driver.remove(Array.from({ length: n / 3 }, (_, i) => `v${i * 3}`));
    const claimed: ClaimedEntry[] = [];
    for (let batch; (batch = await h.driver.claim(100, LEASE, T + 2 * n)).length > 0;) {
      claimed.push(...batch);
    }
    const expected = Array.from({ length: n }, (_, i) => entry(`v${i}`, i % 2 ? 8 : 2, T))
      .filter((_, i) => i % 3 !== 0)
      .sort(contractOrder);
    expect(claimed.map((c) => [c.taskId, c.priority, c.dueAt])).toEqual(
      expected.map((e) => [e.taskId, e.priority, e.dueAt]),
    );
  });

  it('ack removes claims and ignores unknown ids', async () => {
    await h.driver.enqueue([entry('a1', 5, T), entry('a2', 5, T)]);
    await h.driver.claim(2, LEASE, T);
    await h.driver.ack(['a1', 'unknown']);
    expect(await h.driver.size()).toEqual({ pending: 0, claimed: 1 });
    expect(await h.driver.contains(['a1', 'a2'])).toEqual([false, true]);
    expect(await h.driver.requeueExpired(T + 10 * LEASE)).toEqual(['a2']);
  });

  it('extend keeps a claim alive and reports the lost ones', async () => {
    await h.driver.enqueue([entry('e1', 5, T), entry('e2', 5, T)]);
    await h.driver.claim(2, LEASE, T);
    await h.driver.ack(['e2']);
    expect(await h.driver.extend(['e1', 'e2', 'never'], 5000, T + 500)).toEqual(['e1']);
    // The original lease (T + 1000) would have lapsed; the extended one (T + 5500) has not.
    expect(await h.driver.requeueExpired(T + 2000)).toEqual([]);
    expect(await h.driver.requeueExpired(T + 5500)).toEqual(['e1']);
    expect(await h.driver.extend(['e1'], 5000, T + 5500)).toEqual([]);
  });

  it('requeueExpired returns lapsed claims to pending, due now, claimable again', async () => {
    await h.driver.enqueue([entry('r1', 7, T - 100), entry('r2', 2, T - 100)]);
    await h.driver.claim(1, LEASE, T);
    await h.driver.claim(1, 5 * LEASE, T);
    expect(await h.driver.requeueExpired(T + LEASE - 1)).toEqual([]);
    expect(await h.driver.requeueExpired(T + LEASE)).toEqual(['r1']);
    expect(await h.driver.size()).toEqual({ pending: 1, claimed: 1 });
    const again = await h.other.claim(10, LEASE, T + LEASE);
    expect(again).toEqual([
      { taskId: 'r1', priority: 7, dueAt: T + LEASE, leaseUntil: T + 2 * LEASE },
    ]);
  });

  it('an entry enqueued while claimed is pending too; ack leaves that pending entry', async () => {
    await h.driver.enqueue([entry('w', 4, T)]);
    await h.driver.claim(1, LEASE, T);
    await h.driver.enqueue([entry('w', 6, T + 10)]);
    expect(await h.driver.size()).toEqual({ pending: 1, claimed: 1 });
    await h.driver.ack(['w']);
    expect(await h.driver.size()).toEqual({ pending: 1, claimed: 0 });
    expect(ids(await h.driver.claim(1, LEASE, T + 10))).toEqual(['w']);
  });

  it('remove drops pending and claimed entries alike', async () => {
    await h.driver.enqueue([entry('p', 1, T), entry('q', 9, T), entry('s', 3, T)]);
    await h.driver.claim(1, LEASE, T);
    await h.driver.remove(['p', 'q', 'unknown']);
    expect(await h.driver.size()).toEqual({ pending: 1, claimed: 0 });
    expect(await h.driver.contains(['p', 'q', 's'])).toEqual([false, false, true]);
    expect(await h.driver.requeueExpired(T + 10 * LEASE)).toEqual([]);
  });

  it('contains answers in the order asked, for pending and claimed entries', async () => {
    const entries = Array.from({ length: 40 }, (_, i) => entry(`k${i}`, 5, T + i));
    await h.driver.enqueue(entries);
    await h.driver.claim(10, LEASE, T + 100);
    const asked = ['nope', ...entries.map((e) => e.taskId).reverse(), 'k3', 'nada'];
    const expected = [false, ...entries.map(() => true), true, false];
    expect(await h.driver.contains(asked)).toEqual(expected);
    expect(await h.driver.contains([])).toEqual([]);
  });

  it('rejects malformed entries without writing any of the batch', async () => {
    for (const bad of [
      entry('', 1, T),
      entry('b', 10, T),
      entry('b', 1.5, T),
      entry('b', 1, NaN),
    ]) {
      const attempt = h.driver.enqueue([entry('good', 1, T), bad]);
      await expect(attempt).rejects.toMatchObject({ code: QueueErrorCode.INVALID_ENTRY });
    }
    expect(await h.driver.size()).toEqual({ pending: 0, claimed: 0 });
  });

  it('refuses calls once closed', async () => {
    const closed = h.fresh();
    await closed.close();
    await expect(closed.size()).rejects.toMatchObject({ code: QueueErrorCode.CLOSED });
  });

  if (name === 'redis-cluster') {
    describe('redis cluster only', () => {
      let admin: Cluster;

      beforeAll(async () => {
        admin = new Cluster(CLUSTER, { lazyConnect: true });
        await admin.connect();
      });
      afterAll(async () => {
        await admin?.quit();
      });

      it('claims in the global order across shards on several masters', async () => {
        // 16 shards: 16 slots, which land on one master alone about once in 14 million runs.
        const prefix = `${RUN}:spread`;
        const spread = createQueueDriver({
          driver: 'redis',
          redis: { ...CLUSTER[0], cluster: CLUSTER },
          prefix,
          shards: 16,
        });
        try {
          const next = random(7);
          const entries = Array.from({ length: 200 }, (_, i) =>
            entry(`spread-${i}`, Math.floor(next() * 10), T - Math.floor(next() * 50)),
          );
          await spread.enqueue(entries);
          // The masters holding some of the shards' keys.
          const holding = new Set<string>();
          for (const master of admin.nodes('master')) {
            let cursor = '0';
            do {
              const [next, keys] = await master.scan(
                cursor,
                'MATCH',
                `{${prefix}:s*`,
                'COUNT',
                1000,
              );
              if (keys.length > 0) holding.add(`${master.options.host}:${master.options.port}`);
              cursor = next;
            } while (cursor !== '0');
          }
          expect(holding.size).toBeGreaterThan(1);
          const claimed: ClaimedEntry[] = [];
          for (let batch; (batch = await spread.claim(23, LEASE, T)).length > 0;) {
            claimed.push(...batch);
          }
          expect(ids(claimed)).toEqual(ids([...entries].sort(contractOrder) as ClaimedEntry[]));
        } finally {
          await spread.clear();
          await spread.close();
        }
      });

      it('fails a call within its bound when no node of the Cluster answers', async () => {
        // Port 1 on loopback: nothing listens; the client keeps trying to connect meanwhile.
        const down = new RedisQueueDriver({
          redis: {
            host: '127.0.0.1',
            port: 1,
            cluster: [{ host: '127.0.0.1', port: 1 }],
            commandTimeoutMs: 500,
          },
          prefix: RUN,
        });
        try {
          await expect(down.size()).rejects.toMatchObject({
            code: QueueErrorCode.BACKEND_UNAVAILABLE,
          });
        } finally {
          await down.close();
        }
      });

      it('takes a Cluster client it is given, and leaves it open when it closes', async () => {
        const shared = new RedisQueueDriver({ redis: admin, prefix: RUN, shards: SHARDS });
        await shared.enqueue([entry('shared', 2, T)]);
        expect(await h.driver.contains(['shared'])).toEqual([true]);
        await shared.close();
        expect(await admin.ping()).toBe('PONG');
      });
    });
  }

  if (name !== 'redis') return;

  describe('redis only', () => {
    let admin: Redis;

    beforeAll(async () => {
      admin = new Redis({ ...REDIS, lazyConnect: true, maxRetriesPerRequest: 1 });
      await admin.connect();
    });
    afterAll(async () => {
      await admin?.quit();
    });

    async function ourKeys(): Promise<string[]> {
      const keys: string[] = [];
      // The prefix is our own, so every match belongs to this run.
      let cursor = '0';
      do {
        const [next, batch] = await admin.scan(cursor, 'MATCH', `{${RUN}:s*`, 'COUNT', 1000);
        keys.push(...batch);
        cursor = next;
      } while (cursor !== '0');
      return keys;
    }

    it('spreads entries over shards, each shard under its own hash tag', async () => {
      await h.driver.enqueue(Array.from({ length: 64 }, (_, i) => entry(`spread-${i}`, 5, T)));
      const keys = await ourKeys();
      const shards = new Set(keys.map((key) => /^\{.*:s(\d+)\}:/.exec(key)?.[1]));
      expect(shards.has(undefined)).toBe(false);
      expect(shards.size).toBeGreaterThan(1);
    });

    it('keeps working after Redis lost its keys (FLUSHALL); the lost entries read as absent', async () => {
      await h.driver.enqueue(Array.from({ length: 10 }, (_, i) => entry(`lost-${i}`, 5, T)));
      await h.driver.claim(3, LEASE, T);
      const keys = await ourKeys();
      expect(keys.length).toBeGreaterThan(0);
      await admin.del(...keys);
      expect(await h.driver.size()).toEqual({ pending: 0, claimed: 0 });
      // What the Checker asks before it enqueues again from the database.
      expect(await h.driver.contains(['lost-0', 'lost-9'])).toEqual([false, false]);
      expect(await h.driver.extend(['lost-0'], LEASE, T)).toEqual([]);
      await h.driver.enqueue([entry('lost-0', 5, T), entry('fresh', 9, T)]);
      expect(ids(await h.other.claim(10, LEASE, T))).toEqual(['fresh', 'lost-0']);
    });

    it('surfaces an unreachable server as BACKEND_UNAVAILABLE', async () => {
      // Port 1 on loopback: nothing listens, so the connection is refused at once.
      const down = new RedisQueueDriver({ redis: { host: '127.0.0.1', port: 1 }, prefix: RUN });
      try {
        const attempt = down.enqueue([entry('t', 1, T)]);
        await expect(attempt).rejects.toBeInstanceOf(QueueException);
        await expect(down.size()).rejects.toMatchObject({
          code: QueueErrorCode.BACKEND_UNAVAILABLE,
        });
      } finally {
        await down.close();
      }
    });

    it('leaves a client it was given open when it closes', async () => {
      const shared = new RedisQueueDriver({ redis: admin, prefix: RUN, shards: SHARDS });
      await shared.enqueue([entry('shared', 2, T)]);
      expect(await h.driver.contains(['shared'])).toEqual([true]);
      await shared.close();
      expect(await admin.ping()).toBe('PONG');
    });
  });
});
