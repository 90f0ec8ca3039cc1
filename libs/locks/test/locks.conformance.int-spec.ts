/**
 * The one conformance suite every lock driver passes against its real server, the Redis driver
 * also against the machine's Redis Cluster (CONTRIBUTING.md, adding a lock driver). Multi-process cases fork dist/libs/locks/test/fixtures/lock-child.js, so run
 * `npm run build` first (scripts/test.sh does).
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { ChildProcess, execFileSync, fork } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Etcd3 } from 'etcd3';
import Redis, { Cluster } from 'ioredis';
import { createConnection, Connection } from 'mysql2/promise';
import * as zk from 'node-zookeeper-client';
import {
  createLockProvider,
  FenceGuard,
  Lease,
  LeaseLostReason,
  LockConfig,
  LockErrorCode,
  LockProvider,
} from '@baton/locks';
import { ManualClock } from '@baton/time';
import type { ChildMessage, ChildStart } from './fixtures/lock-child';
import { TcpProxy } from './fixtures/tcp-proxy';
import { LockCase, SERVER_OF, driverOf, testLockConfig } from './lock-test-config';

jest.setTimeout(60_000);

const CHILD = resolve(__dirname, '../../../dist/libs/locks/test/fixtures/lock-child.js');
const RUN = `t${process.pid}-${Date.now().toString(36)}`;
/** Every driver; the Redis one also on the machine's Redis Cluster (redis-cluster). */
const CASES: LockCase[] = ['local', 'mysql', 'redis', 'redis-cluster', 'zookeeper', 'etcd'];
const NOT_HOLDER_OR_LOST = expect.stringMatching(
  `^(${LockErrorCode.NOT_HOLDER}|${LockErrorCode.LEASE_LOST})$`,
);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Backend access that goes around the provider, to play "the server dropped the holder". */
interface Backdoor {
  dropHolder(key: string): Promise<void>;
  close(): Promise<void>;
}

async function openBackdoor(driver: LockCase, config: LockConfig): Promise<Backdoor> {
  switch (driver) {
    case 'local':
      return { dropHolder: async () => undefined, close: async () => undefined };
    case 'mysql': {
      const c = config.mysql!;
      const conn: Connection = await createConnection({
        host: c.host,
        port: c.port,
        user: c.user,
        password: c.password,
        database: c.database,
      });
      return {
        dropHolder: async (key) => {
          await conn.execute(
            'UPDATE baton_lock_lease SET holder = NULL, expires_at = 0 WHERE lock_key = ?',
            [key],
          );
        },
        close: () => conn.end(),
      };
    }
    case 'redis': {
      const n = config.redis!.nodes[0];
      const redis = new Redis({ host: n.host, port: n.port, lazyConnect: true });
      await redis.connect();
      return {
        dropHolder: async (key) => {
          // "Expire in Redis": the key goes away as if its TTL ran out.
          await redis.pexpire(`baton:lock:{${key}}`, 1);
        },
        close: async () => {
          await redis.quit();
        },
      };
    }
    case 'redis-cluster': {
      const { cluster } = config.redis!.nodes[0];
      const redis = new Cluster([...cluster!], { lazyConnect: true });
      await redis.connect();
      return {
        dropHolder: async (key) => {
          // On the master serving the key's slot, as the driver's own calls go.
          await redis.pexpire(`baton:lock:{${key}}`, 1);
        },
        close: async () => {
          await redis.quit();
        },
      };
    }
    case 'zookeeper': {
      const client = zk.createClient(config.zookeeper!.connectionString, { sessionTimeout: 2000 });
      await new Promise<void>((ok) => {
        client.once('connected', () => ok());
        client.connect();
      });
      const call = <T>(fn: (cb: (e: unknown, v: T) => void) => void): Promise<T> =>
        new Promise((ok, fail) => fn((e, v) => (e ? fail(e) : ok(v))));
      return {
        dropHolder: async (key) => {
          const parent = `/baton/locks/${encodeURIComponent(key)}`;
          const children = await call<string[]>((cb) => client.getChildren(parent, cb));
          for (const child of children) {
            await call<void>((cb) => client.remove(`${parent}/${child}`, -1, cb));
          }
        },
        close: async () => client.close(),
      };
    }
    case 'etcd': {
      const etcd = new Etcd3({ hosts: [...config.etcd!.hosts] });
      return {
        dropHolder: async (key) => {
          // "Expire in etcd": revoke the holder's lease, which deletes the key.
          const res = await etcd.get(`baton/lock/${key}`).exec();
          const leaseId = res.kvs[0]?.lease;
          if (!leaseId || leaseId === '0') throw new Error(`no lease on ${key}`);
          await etcd.leaseClient.leaseRevoke({ ID: leaseId });
        },
        close: async () => etcd.close(),
      };
    }
  }
}

/** Fails the run (never skips) when the driver's server is down. */
async function preflight(driver: LockCase, locks: LockProvider): Promise<void> {
  try {
    const probe = await locks.tryAcquire(`${RUN}:probe`, { ttlMs: 2000 });
    await probe?.release();
  } catch (error) {
    throw new Error(
      `${SERVER_OF[driver]} is not reachable (${(error as Error).message}): run \`bash scripts/services.sh\``,
    );
  }
}

function startChild(start: ChildStart): { child: ChildProcess; messages: ChildMessage[] } {
  const child = fork(CHILD, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const messages: ChildMessage[] = [];
  child.on('message', (m: ChildMessage) => messages.push(m));
  child.send(start);
  return { child, messages };
}

async function nextMessage<T extends ChildMessage['type']>(
  run: { messages: ChildMessage[] },
  type: T,
  timeoutMs: number,
): Promise<Extract<ChildMessage, { type: T }>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const error = run.messages.find((m) => m.type === 'error');
    if (error && error.type === 'error') throw new Error(`child failed: ${error.message}`);
    const index = run.messages.findIndex((m) => m.type === type);
    if (index >= 0) return run.messages.splice(index, 1)[0] as Extract<ChildMessage, { type: T }>;
    if (Date.now() > until) throw new Error(`child sent no "${type}" within ${timeoutMs} ms`);
    await sleep(20);
  }
}

function waitForLost(lease: Lease, timeoutMs: number): Promise<LeaseLostReason> {
  return new Promise((ok, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`no lost event within ${timeoutMs} ms`)),
      timeoutMs,
    );
    lease.onLost((reason) => {
      clearTimeout(timer);
      ok(reason);
    });
  });
}

beforeAll(() => {
  if (!existsSync(CHILD)) {
    throw new Error(`${CHILD} is missing: run \`npm run build\` before the integration tests`);
  }
});

describe.each(CASES)('LockProvider conformance: %s', (name) => {
  const driver = driverOf(name);
  const config = testLockConfig(name);
  // Processes are a meaningful boundary only for the distributed drivers; local is in-process.
  const crossProcess = driver !== 'local';
  let a: LockProvider;
  let b: LockProvider;
  let backdoor: Backdoor;
  const children: ChildProcess[] = [];
  let n = 0;
  const key = (what: string): string => `${RUN}:${name}:${what}:${n++}`;
  // etcd leases are whole seconds with a server minimum of about 2 s.
  const shortTtl = driver === 'etcd' ? 2000 : 1000;
  const lapseMs = driver === 'etcd' ? 1500 : 800;

  beforeAll(async () => {
    a = createLockProvider(config);
    // For local, "another process" is the same provider (the only way two callers can meet).
    b = driver === 'local' ? a : createLockProvider(config);
    await preflight(name, a);
    await preflight(name, b);
    backdoor = await openBackdoor(name, config);
  });

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await a?.close();
    if (b !== a) await b?.close();
    await backdoor?.close();
  });

  it('reports its driver name', () => {
    expect(a.driver).toBe(driver);
  });

  it('gives each new holder of a key a strictly higher fence, also after a restart', async () => {
    const k = key('fence');
    const fences: number[] = [];
    for (let i = 0; i < 4; i++) {
      const lease = await (i % 2 ? b : a).acquire(k, { ttlMs: 5000, waitMs: 2000 });
      fences.push(lease.fence);
      await lease.release();
    }
    // A new provider stands for a restarted process: the counter lives in the backend.
    const restarted = createLockProvider(config);
    try {
      const lease = await restarted.acquire(k, { ttlMs: 5000, waitMs: 2000 });
      fences.push(lease.fence);
      await lease.release();
    } finally {
      await restarted.close();
    }
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]);
  });

  it('refuses a second holder while the key is held', async () => {
    const k = key('exclusive');
    const lease = await a.acquire(k, { ttlMs: 5000 });
    await expect(b.tryAcquire(k, { ttlMs: 5000 })).resolves.toBeNull();
    await expect(b.acquire(k, { ttlMs: 5000, waitMs: 300 })).rejects.toMatchObject({
      code: LockErrorCode.LOCK_TIMEOUT,
    });
    await lease.release();
    const next = await b.tryAcquire(k, { ttlMs: 5000 });
    expect(next).not.toBeNull();
    await next!.release();
  });

  it('frees the key when the TTL expires and reports the holder lost', async () => {
    const k = key('ttl');
    const lease = await a.acquire(k, { ttlMs: 1000 });
    const lost = waitForLost(lease, 5000);
    // etcd rounds a lease up to whole seconds (server minimum about 2 s): wait generously.
    const next = await b.acquire(k, { ttlMs: 5000, waitMs: 8000 });
    expect(next.fence).toBeGreaterThan(lease.fence);
    await expect(lost).resolves.toBe('expired');
    expect(lease.lost).toBe(true);
    await next.release();
  });

  it('keeps the key while the holder extends it past the TTL', async () => {
    const k = key('extend');
    const lease = await a.acquire(k, { ttlMs: 2000 });
    const firstExpiry = lease.expiresAt.getTime();
    for (let i = 0; i < 4; i++) {
      await sleep(800);
      await lease.extend();
      await expect(b.tryAcquire(k, { ttlMs: 2000 })).resolves.toBeNull();
    }
    expect(lease.expiresAt.getTime()).toBeGreaterThan(firstExpiry);
    expect(lease.lost).toBe(false);
    await lease.release();
  });

  it('refuses release and extend by a holder whose lease passed to someone else', async () => {
    const k = key('stale');
    const stale = await a.acquire(k, { ttlMs: 1000 });
    const current = await b.acquire(k, { ttlMs: 10_000, waitMs: 8000 });
    // extend first: on a released lease it would fail locally without asking anyone.
    await expect(stale.extend()).rejects.toMatchObject({ code: NOT_HOLDER_OR_LOST });
    await expect(stale.release()).rejects.toMatchObject({ code: LockErrorCode.NOT_HOLDER });
    // The refused calls touched nothing of the current holder.
    await expect(a.tryAcquire(k, { ttlMs: 1000 })).resolves.toBeNull();
    await expect(current.extend()).resolves.toBeUndefined();
    expect(current.lost).toBe(false);
    await expect(current.release()).resolves.toBeUndefined();
  });

  if (crossProcess) {
    it('refuses, at the backend, extend by a holder whose key was dropped and taken', async () => {
      const k = key('dropped');
      // A long TTL: nothing on the holder's clock tells it the key is gone.
      const stale = await a.acquire(k, { ttlMs: 20_000 });
      await backdoor.dropHolder(k);
      const current = await b.acquire(k, { ttlMs: 10_000, waitMs: 8000 });
      expect(current.fence).toBeGreaterThan(stale.fence);
      // MySQL and Redis hear it from the backend; ZooKeeper and etcd may have had the watch first.
      await expect(stale.extend()).rejects.toMatchObject({
        code:
          driver === 'mysql' || driver === 'redis' ? LockErrorCode.NOT_HOLDER : NOT_HOLDER_OR_LOST,
      });
      await expect(stale.release()).rejects.toMatchObject({ code: LockErrorCode.NOT_HOLDER });
      await expect(current.extend()).resolves.toBeUndefined();
      await expect(a.tryAcquire(k, { ttlMs: 1000 })).resolves.toBeNull();
      await current.release();
    });
  }

  it('returns a live lease with a full TTL ahead after waiting longer than the TTL', async () => {
    const k = key('longwait');
    const holder = await a.acquire(k, { ttlMs: 20_000 });
    const waiting = b.acquire(k, { ttlMs: shortTtl, waitMs: 20_000 });
    // The waiter's TTL (and, for etcd, any lease granted before the wait) runs out meanwhile.
    await sleep(shortTtl + lapseMs);
    await holder.release();
    const lease = await waiting;
    const ahead = lease.expiresAt.getTime() - Date.now();
    expect(lease.lost).toBe(false);
    expect(ahead).toBeGreaterThan(shortTtl / 2);
    expect(ahead).toBeLessThanOrEqual(shortTtl);
    // Really held on the backend, not just on the holder's clock.
    await expect(lease.extend()).resolves.toBeUndefined();
    await expect(a.tryAcquire(k, { ttlMs: 1000 })).resolves.toBeNull();
    await lease.release();
  });

  it('keeps the first keys of a multi-key acquire while it waits for the next', async () => {
    const [m1, m2] = [key('lapse'), key('lapse')].sort();
    const blocker = await a.acquire(m2, { ttlMs: 20_000 });
    // Renewed at half its TTL while it waits: with a TTL of 1 s, m1 was lost once on a loaded box
    // (this process stalled past the renewal's 500 ms, and a late renewal finds the key lapsed,
    // as it should); 2 s rides out a 1 s stall and still proves the renewals.
    const multiTtl = Math.max(shortTtl, 2000);
    const multi = b.acquire([m1, m2], { ttlMs: multiTtl, waitMs: 20_000 });
    // m1 would have lapsed on the backend twice over without renewal.
    await sleep(multiTtl * 2 + lapseMs);
    const rival = await a.tryAcquire(m1, { ttlMs: 20_000 });
    try {
      expect(rival).toBeNull();
    } finally {
      await blocker.release();
    }
    const lease = await multi;
    expect(lease.lost).toBe(false);
    expect(lease.expiresAt.getTime()).toBeGreaterThan(Date.now());
    await expect(a.tryAcquire(m1, { ttlMs: 1000 })).resolves.toBeNull();
    await expect(lease.extend()).resolves.toBeUndefined();
    await lease.release();
  });

  if (crossProcess) {
    it('never hands out a lease over a key the backend dropped before the lease was built', async () => {
      const [m1, m2] = [key('early'), key('early')].sort();
      const blocker = await b.acquire(m2, { ttlMs: 20_000 });
      const multi = a.acquire([m1, m2], { ttlMs: 10_000, waitMs: 20_000 });
      await sleep(500);
      await expect(b.tryAcquire(m1, { ttlMs: 1000 })).resolves.toBeNull();
      // Dropped while the acquire waits for m2, i.e. before any lost handler of a lease exists.
      await backdoor.dropHolder(m1);
      await sleep(500);
      await blocker.release();
      const lease = await multi;
      // Taken again after the loss (or born lost): never a live lease over a free key.
      expect(lease.lost).toBe(false);
      await expect(b.tryAcquire(m1, { ttlMs: 1000 })).resolves.toBeNull();
      await expect(lease.extend()).resolves.toBeUndefined();
      await lease.release();
    });
  }

  it('fires the lost event when the backend drops the holder', async () => {
    const k = key('lost');
    // local has no backend to drop the key: its loss is the holder's own clock, so no renewal.
    const lease = await a.acquire(k, { ttlMs: 1500, autoRenew: driver !== 'local' });
    const lost = waitForLost(lease, 6000);
    await backdoor.dropHolder(k);
    // MySQL and Redis learn it from the refused renewal, ZooKeeper and etcd from their watch.
    await expect(lost).resolves.toBe(driver === 'local' ? 'expired' : 'revoked');
    expect(lease.lost).toBe(true);
    await expect(lease.extend()).rejects.toMatchObject({ code: LockErrorCode.LEASE_LOST });
  });

  it('wakes a waiter on release, not by polling: a waiter whose clock stands still gets the key', async () => {
    const k = key('wake');
    // The waiter's time source never moves: its next poll never comes, and neither does its
    // wait's end. Only the release can hand it the key. local, and MySQL (which has no
    // notifications: across processes its waiters poll, every maxPollMs at most), wake waiters
    // of the same provider: there holder and waiter share one.
    const still = new ManualClock(Date.now());
    const shared = driver === 'local' || driver === 'mysql';
    const holder = shared ? createLockProvider(config, still) : a;
    const waiter = shared ? holder : createLockProvider(config, still);
    try {
      const lease = await holder.acquire(k, { ttlMs: 20_000 });
      const timers = still.pending();
      const waiting = waiter.acquire(k, { ttlMs: 5000, waitMs: 15_000 });
      // Its first try found the key held once it waits on its (still) clock: a timer more.
      while (still.pending() <= timers) await new Promise((r) => setImmediate(r));
      await lease.release();
      const next = await waiting;
      expect(next.fence).toBeGreaterThan(lease.fence);
      await next.release();
    } finally {
      if (waiter !== a) await waiter.close();
    }
  });

  it('takes several keys all or none', async () => {
    const [k1, k2, k3] = [key('m'), key('m'), key('m')];
    const blocker = await b.acquire(k2, { ttlMs: 10_000 });
    await expect(a.tryAcquire([k1, k2, k3], { ttlMs: 5000 })).resolves.toBeNull();
    // None of the free keys stayed taken by the failed attempt.
    const probe = await b.tryAcquire([k1, k3], { ttlMs: 5000 });
    expect(probe).not.toBeNull();
    await probe!.release();
    await blocker.release();
    const all = await a.acquire([k3, k1, k2], { ttlMs: 5000 });
    expect(all.keys).toEqual([k1, k2, k3].sort());
    expect(all.fences.size).toBe(3);
    await all.release();
  });

  it('never lets two holders in at once under contention from several processes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-locks-'));
    const keys = [key('mx'), key('mx'), key('mx')];
    for (const k of keys) writeFileSync(join(dir, `${encodeURIComponent(k)}.count`), '0');
    const iterations = 12;
    const workers = 3;
    try {
      const results: { violations: number; fences: Record<string, number[]> }[] = [];
      if (crossProcess) {
        const runs = Array.from({ length: workers }, () =>
          startChild({ mode: 'mutex', config, keys, iterations, dir, ttlMs: 10_000 }),
        );
        children.push(...runs.map((r) => r.child));
        for (const run of runs) results.push(await nextMessage(run, 'done', 50_000));
      } else {
        // In-process contention through the same provider (what the local driver is for). One
        // set for all workers: a key found in it is a key someone else believes it holds.
        const holders = new Set<string>();
        await Promise.all(
          Array.from({ length: workers }, async (_, w) => {
            let violations = 0;
            const fences: Record<string, number[]> = {};
            for (let i = 0; i < iterations; i++) {
              const k = keys[(i + w) % keys.length];
              const lease = await a.acquire(k, { ttlMs: 10_000, waitMs: 20_000 });
              (fences[k] ??= []).push(lease.fence);
              if (holders.has(k)) violations++;
              holders.add(k);
              const file = join(dir, `${encodeURIComponent(k)}.count`);
              const value = Number(readFileSync(file, 'utf8'));
              await sleep(2);
              writeFileSync(file, String(value + 1));
              holders.delete(k);
              await lease.release();
            }
            results.push({ violations, fences });
          }),
        );
      }
      expect(results.map((r) => r.violations)).toEqual(Array(workers).fill(0));
      // A lost update of the unguarded read-modify-write would show as a short count.
      const total = keys
        .map((k) => Number(readFileSync(join(dir, `${encodeURIComponent(k)}.count`), 'utf8')))
        .reduce((s, v) => s + v, 0);
      expect(total).toBe(iterations * workers);
      // Fences of one key, from every worker, are all distinct.
      for (const k of keys) {
        const all = results.flatMap((r) => r.fences[k] ?? []);
        expect(new Set(all).size).toBe(all.length);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('never deadlocks two processes taking overlapping key sets in different orders', async () => {
    const keys = [key('dl'), key('dl'), key('dl')];
    const iterations = 10;
    if (crossProcess) {
      const runs = [keys, [...keys].reverse()].map((set) =>
        startChild({ mode: 'multikey', config, keys: set, iterations, ttlMs: 10_000 }),
      );
      children.push(...runs.map((r) => r.child));
      for (const run of runs) {
        await expect(nextMessage(run, 'done', 40_000)).resolves.toMatchObject({ ops: iterations });
      }
    } else {
      const done = await Promise.all(
        [keys, [...keys].reverse()].map(async (set) => {
          for (let i = 0; i < iterations; i++) {
            const lease = await a.acquire(set, { ttlMs: 10_000, waitMs: 20_000 });
            await sleep(5);
            await lease.release();
          }
          return iterations;
        }),
      );
      expect(done).toEqual([iterations, iterations]);
    }
  });

  it('refuses, by fence, a holder that was paused past its TTL', async () => {
    const k = key('paused');
    const guard = new FenceGuard();
    if (!crossProcess) {
      // In-process stand-in for a pause: the holder simply does nothing past its TTL.
      const paused = await a.acquire(k, { ttlMs: 300 });
      guard.check(k, paused.fence);
      await sleep(500);
      const next = await a.acquire(k, { ttlMs: 5000, waitMs: 2000 });
      guard.check(k, next.fence);
      expect(paused.lost).toBe(true);
      expect(() => guard.check(k, paused.fence)).toThrow(
        expect.objectContaining({ code: LockErrorCode.STALE_FENCE }),
      );
      await next.release();
      return;
    }
    // A real process holds with auto-renewal, then is stopped (SIGSTOP) so it cannot renew.
    const run = startChild({ mode: 'hold', config, key: k, ttlMs: 1500, autoRenew: true });
    children.push(run.child);
    const { fence: oldFence } = await nextMessage(run, 'fence', 15_000);
    guard.check(k, oldFence);
    run.child.kill('SIGSTOP');
    try {
      const next = await b.acquire(k, { ttlMs: 10_000, waitMs: 15_000 });
      expect(next.fence).toBeGreaterThan(oldFence);
      guard.check(k, next.fence);
      run.child.kill('SIGCONT');
      // Woken up, the old holder learns it lost the lease ...
      await expect(nextMessage(run, 'lost', 10_000)).resolves.toMatchObject({ type: 'lost' });
      run.child.send({ type: 'extend' });
      await expect(nextMessage(run, 'extended', 10_000)).resolves.toMatchObject({ ok: false });
      // ... and whatever it still tries to write carries its old fence, which the resource refuses.
      expect(() => guard.check(k, oldFence)).toThrow(
        expect.objectContaining({ code: LockErrorCode.STALE_FENCE }),
      );
      expect(guard.highestFor(k)).toBe(next.fence);
      await next.release();
    } finally {
      run.child.kill('SIGCONT');
      run.child.kill('SIGKILL');
    }
  });

  // Several independent servers: the quorum's own cases, on the standalone server.
  if (name === 'redis') {
    it('hands out a fence only once it is recorded on a quorum of Redis servers', async () => {
      // A second, independent Redis (no persistence), reached through a proxy that can refuse
      // the one call that raises its fence counter. Two nodes: the quorum is both.
      const port = 6380;
      execFileSync('redis-server', [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--daemonize',
        'yes',
        '--save',
        '',
        '--appendonly',
        'no',
      ]);
      const second = new Redis({ host: '127.0.0.1', port, lazyConnect: true });
      const first = new Redis({ ...config.redis!.nodes[0], lazyConnect: true });
      let proxy: TcpProxy | undefined;
      let locks: LockProvider | undefined;
      try {
        // --daemonize returns before the server listens.
        for (let i = 0; i < 50; i++) {
          try {
            if (execFileSync('redis-cli', ['-p', String(port), 'ping']).includes('PONG')) break;
          } catch {
            // not listening yet
          }
          await sleep(50);
        }
        await second.connect();
        await first.connect();
        proxy = await TcpProxy.start('127.0.0.1', port);
        const k = key('quorum');
        const counter = `baton:lock:{${k}}:fence`;
        // The first server has counted further (holders it saw while the other was away).
        await first.set(counter, 10);
        locks = createLockProvider({
          driver: 'redis',
          redis: { nodes: [config.redis!.nodes[0], { host: '127.0.0.1', port: proxy.port }] },
        });
        // The second server never hears the raise of its counter to the fence handed out.
        proxy.answerNext('if current < tonumber(ARGV[1])', '-ERR injected failure\r\n');
        const lease = await locks.acquire(k, { ttlMs: 5000, waitMs: 5000 });
        // Whatever fence was handed out is known to both servers, so no later quorum counts below it.
        expect(Number(await first.get(counter))).toBeGreaterThanOrEqual(lease.fence);
        expect(Number(await second.get(counter))).toBeGreaterThanOrEqual(lease.fence);
        await lease.release();
      } finally {
        await locks?.close();
        await proxy?.close();
        second.disconnect();
        execFileSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave']);
        await first.quit();
      }
    });
  }

  if (name === 'redis') {
    it('keeps working with one of three Redis nodes down (the quorum is two)', async () => {
      const n0 = config.redis!.nodes[0];
      // Two independent keyspaces of the machine's Redis, and a node that refuses connections.
      const nodes = [n0, { ...n0, db: 3 }, { host: '127.0.0.1', port: 1 }];
      const locks = createLockProvider({ driver: 'redis', redis: { nodes, maxPollMs: 5000 } });
      // The waiter's clock stands still: it never polls again; only a release message wakes it.
      const waiter = createLockProvider(
        { driver: 'redis', redis: { nodes, maxPollMs: 5000 } },
        new ManualClock(Date.now()),
      );
      try {
        const k = key('one-down');
        const first = await locks.acquire(k, { ttlMs: 5000 });
        // Woken by the release (published on the nodes that are up), not by polling.
        const waiting = waiter.acquire(k, { ttlMs: 5000, waitMs: 4000 });
        await sleep(100);
        await first.release();
        const second = await waiting;
        expect(second.fence).toBeGreaterThan(first.fence);
        await second.release();
      } finally {
        await locks.close();
        await waiter.close();
      }
    });
  }

  if (driver === 'zookeeper') {
    /** A provider talking to ZooKeeper through a proxy that can fail like a network. */
    const viaProxy = async (
      sessionTimeoutMs: number,
    ): Promise<{ proxy: TcpProxy; locks: LockProvider }> => {
      const [host, port] = config.zookeeper!.connectionString.split(',')[0].split(':');
      const proxy = await TcpProxy.start(host, Number(port));
      const locks = createLockProvider({
        driver: 'zookeeper',
        zookeeper: { connectionString: `127.0.0.1:${proxy.port}`, sessionTimeoutMs },
      });
      return { proxy, locks };
    };

    it('reports a silent partition as lost before the server can hand the key on', async () => {
      const { proxy, locks } = await viaProxy(4000);
      try {
        const k = key('partition');
        const lease = await locks.acquire(k, { ttlMs: 30_000, autoRenew: true });
        // No FIN, no RST: the client library sees nothing and has no read timeout.
        proxy.blackhole();
        // The server expires the silent session after ~4 s and the waiter gets the key ...
        const next = await b.acquire(k, { ttlMs: 5000, waitMs: 20_000 });
        // ... by which time the holder must have stopped believing it holds it.
        expect(lease.lost).toBe(true);
        expect(['connection_lost', 'session_lost']).toContain(lease.lostReason);
        expect(next.fence).toBeGreaterThan(lease.fence);
        await next.release();
      } finally {
        await locks.close();
        await proxy.close();
      }
    });

    it('reports lost as soon as the connection drops, not after the session timeout', async () => {
      // The longest session the test server grants: without the fix the loss comes after it.
      const { proxy, locks } = await viaProxy(10_000);
      try {
        const lease = await locks.acquire(key('suspended'), { ttlMs: 30_000 });
        const lost = waitForLost(lease, 3000);
        proxy.disconnect();
        await expect(lost).resolves.toBe('connection_lost');
      } finally {
        await locks.close();
        await proxy.close();
      }
    });

    it('removes its znode when the reply to the create is lost', async () => {
      const { proxy, locks } = await viaProxy(10_000);
      try {
        const k = key('orphan');
        // The create reaches the server, its reply never comes back, the connection drops.
        proxy.cutAfter('lease-');
        await expect(locks.acquire(k, { ttlMs: 5000 })).rejects.toMatchObject({
          code: LockErrorCode.BACKEND_UNAVAILABLE,
        });
        // Without cleanup the orphan would block every taker for the 10 s session.
        const next = await b.acquire(k, { ttlMs: 5000, waitMs: 3000 });
        await next.release();
      } finally {
        await locks.close();
        await proxy.close();
      }
    });

    it('reports session_lost when the ZooKeeper session of a holder expires', async () => {
      const k = key('session');
      // A long TTL and renewal, so nothing but the session can end this lease.
      const run = startChild({ mode: 'hold', config, key: k, ttlMs: 30_000, autoRenew: true });
      children.push(run.child);
      await nextMessage(run, 'fence', 15_000);
      run.child.kill('SIGSTOP');
      // The server expires the silent session after its timeout (2 s) and drops its znodes.
      const next = await b.acquire(k, { ttlMs: 5000, waitMs: 15_000 });
      run.child.kill('SIGCONT');
      await expect(nextMessage(run, 'lost', 15_000)).resolves.toEqual({
        type: 'lost',
        reason: 'session_lost',
      });
      await next.release();
      run.child.kill('SIGKILL');
    });
  }
});
