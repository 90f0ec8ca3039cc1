/**
 * `inspect`: every driver reads who holds a key from its real server (never skipped; a server
 * that is down fails the run). The holder is always another provider than the one asking (for
 * `local`, whose backend is the process's memory, the same one).
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { createConnection } from 'mysql2/promise';
import {
  createLockProvider,
  LockDriverName,
  LockErrorCode,
  LockProvider,
  LockState,
  MAX_HOLDER_LABEL,
} from '@baton/locks';
import { SERVER_OF, testLockConfig } from './lock-test-config';
import { eventually } from '../../../test/support/processes';

jest.setTimeout(60_000);

const RUN = `i${process.pid}-${Date.now().toString(36)}`;
const DRIVERS: LockDriverName[] = ['local', 'mysql', 'redis', 'zookeeper', 'etcd'];
const until = <T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> =>
  eventually(probe, ms, what, 100);

describe.each(DRIVERS)('LockProvider.inspect: %s', (driver) => {
  const config = testLockConfig(driver);
  let asker: LockProvider;
  let holder: LockProvider;
  let n = 0;
  const key = (name: string): string => `${RUN}:${driver}:${name}:${n++}`;
  const one = async (k: string): Promise<LockState> => (await asker.inspect([k]))[0];
  /** ZooKeeper keeps no expiry: the znode lives with the session. */
  const keepsExpiry = driver !== 'zookeeper';

  beforeAll(async () => {
    asker = createLockProvider(config);
    holder = driver === 'local' ? asker : createLockProvider(config);
    try {
      await asker.inspect([`${RUN}:probe`]);
      await holder.inspect([`${RUN}:probe`]);
    } catch (error) {
      throw new Error(
        `${SERVER_OF[driver]} is not reachable (${(error as Error).message}): run \`bash scripts/services.sh\``,
      );
    }
  });

  afterAll(async () => {
    await asker?.close();
    if (holder !== asker) await holder?.close();
  });

  it('says a key nobody took is free', async () => {
    const k = key('never');
    await expect(asker.inspect([k])).resolves.toEqual([
      { key: k, held: false, holder: null, token: null, fence: null, expiresAt: null },
    ]);
  });

  it('names the holder by its label, with its fence and the end of its lease', async () => {
    const k = key('labelled');
    const label = 'task 01ABC on scheduler s-1';
    const before = Date.now();
    const lease = await holder.acquire(k, { ttlMs: 10_000, holder: label });
    const state = await one(k);
    expect(state).toMatchObject({ key: k, held: true, holder: label, fence: lease.fence });
    expect(state.token).toEqual(expect.any(String));
    if (keepsExpiry) {
      const end = state.expiresAt!.getTime();
      // etcd counts whole seconds: its answer may be up to a second short.
      expect(end).toBeGreaterThan(before + 8000);
      expect(end).toBeLessThanOrEqual(Date.now() + 10_000 + 50);
    } else {
      expect(state.expiresAt).toBeNull();
    }
    // Reading took nothing: the holder still holds, nobody else can take it.
    await expect(asker.tryAcquire(k, { ttlMs: 1000 })).resolves.toBeNull();
    await expect(lease.extend()).resolves.toBeUndefined();
    await lease.release();
    await expect(one(k)).resolves.toMatchObject({ held: false, holder: null, fence: null });
  });

  it('keeps a label with any characters up to the limit, and refuses a longer or empty one', async () => {
    const k = key('unicode');
    const label = `tâche ✓ «${'x'.repeat(MAX_HOLDER_LABEL - 10)}»`;
    expect(label.length).toBe(MAX_HOLDER_LABEL);
    const lease = await holder.acquire(k, { ttlMs: 10_000, holder: label });
    await expect(one(k)).resolves.toMatchObject({ held: true, holder: label });
    await lease.release();
    for (const bad of ['', 'y'.repeat(MAX_HOLDER_LABEL + 1)]) {
      await expect(holder.acquire(k, { ttlMs: 5000, holder: bad })).rejects.toMatchObject({
        code: LockErrorCode.INVALID_CONFIG,
      });
    }
    // The refused acquires took nothing.
    await expect(one(k)).resolves.toMatchObject({ held: false });
  });

  it('tells successive holders apart; a holder without a label is not named by the one before', async () => {
    const k = key('successive');
    const first = await holder.acquire(k, { ttlMs: 10_000, holder: 'first' });
    const s1 = await one(k);
    await first.release();
    // No label this time: what the first holder left in the backend must not be shown.
    const second = await asker.acquire(k, { ttlMs: 10_000 });
    const s2 = await one(k);
    expect(s2).toMatchObject({ held: true, holder: null, fence: second.fence });
    expect(s2.token).not.toBeNull();
    expect(s2.token).not.toBe(s1.token);
    expect(second.fence).toBeGreaterThan(first.fence);
    await second.release();
    const third = await holder.acquire(k, { ttlMs: 10_000, holder: 'third' });
    await expect(one(k)).resolves.toMatchObject({ holder: 'third', fence: third.fence });
    await third.release();
  });

  it('answers every key of a multi-key lease, in the order asked, once each', async () => {
    const [k1, k2, k3] = [key('multi'), key('multi'), key('multi')];
    const lease = await holder.acquire([k2, k1], { ttlMs: 10_000, holder: 'multi holder' });
    const states = await asker.inspect([k3, k2, k1, k2]);
    expect(states.map((s) => s.key)).toEqual([k3, k2, k1]);
    expect(states.map((s) => s.held)).toEqual([false, true, true]);
    expect(states[1]).toMatchObject({ holder: 'multi holder', fence: lease.fences.get(k2) });
    expect(states[2]).toMatchObject({ holder: 'multi holder', fence: lease.fences.get(k1) });
    await lease.release();
  });

  it('shows the key free once a holding that was never released has run out', async () => {
    const k = key('lapsed');
    // etcd's lease is whole seconds with a server minimum of about 2 s.
    const ttlMs = driver === 'etcd' ? 2000 : 800;
    const lease = await holder.acquire(k, { ttlMs, holder: 'will lapse' });
    await expect(one(k)).resolves.toMatchObject({ held: true, holder: 'will lapse' });
    await until('the key free', 15_000, async () => ((await one(k)).held ? undefined : true));
    expect(lease.lost).toBe(true);
  });

  it('refuses an empty key, and answers nothing when asked about no key', async () => {
    await expect(asker.inspect([''])).rejects.toMatchObject({
      code: LockErrorCode.INVALID_CONFIG,
    });
    await expect(asker.inspect([])).resolves.toEqual([]);
  });

  if (driver !== 'local') {
    it('fails with BACKEND_UNAVAILABLE when the server cannot be reached', async () => {
      const unreachable = createLockProvider(
        driver === 'mysql'
          ? { driver, mysql: { ...config.mysql!, port: 1 } }
          : driver === 'redis'
            ? { driver, redis: { nodes: [{ host: '127.0.0.1', port: 1 }] } }
            : driver === 'zookeeper'
              ? {
                  driver,
                  zookeeper: { connectionString: '127.0.0.1:1', connectTimeoutMs: 1000 },
                }
              : { driver, etcd: { hosts: ['http://127.0.0.1:1'], callTimeoutMs: 1000 } },
      );
      try {
        await expect(unreachable.inspect([key('down')])).rejects.toMatchObject({
          code: LockErrorCode.BACKEND_UNAVAILABLE,
        });
      } finally {
        await unreachable.close();
      }
    });
  }

  if (driver === 'redis') {
    it('counts a quorum of Redis nodes: answers with one of three down, refuses with two down', async () => {
      const n0 = config.redis!.nodes[0];
      const down = { host: '127.0.0.1', port: 1 };
      // Two independent keyspaces of the machine's Redis, and a node that refuses connections.
      const three = createLockProvider({
        driver,
        redis: { nodes: [n0, { ...n0, db: 3 }, down] },
      });
      const minority = createLockProvider({
        driver,
        redis: { nodes: [n0, down, { ...down, port: 2 }] },
      });
      try {
        const k = key('quorum');
        const lease = await three.acquire(k, { ttlMs: 10_000, holder: 'on two of three' });
        await expect(three.inspect([k])).resolves.toMatchObject([
          { held: true, holder: 'on two of three', fence: lease.fence },
        ]);
        // One node answering cannot say whether a quorum holds the key.
        await expect(minority.inspect([k])).rejects.toMatchObject({
          code: LockErrorCode.BACKEND_UNAVAILABLE,
        });
        await lease.release();
        await expect(three.inspect([k])).resolves.toMatchObject([{ held: false }]);
      } finally {
        await three.close();
        await minority.close();
      }
    });
  }

  if (driver === 'mysql') {
    it('adds the label column to a lease table made before labels existed', async () => {
      const c = config.mysql!;
      const table = `baton_lock_old_${process.pid}`;
      const conn = await createConnection({
        host: c.host,
        port: c.port,
        user: c.user,
        password: c.password,
        database: c.database,
      });
      await conn.query(`DROP TABLE IF EXISTS ${table}`);
      await conn.query(
        `CREATE TABLE ${table} (lock_key VARCHAR(191) NOT NULL PRIMARY KEY, holder CHAR(36) NULL,
         fence BIGINT UNSIGNED NOT NULL DEFAULT 0, expires_at BIGINT UNSIGNED NOT NULL DEFAULT 0)`,
      );
      await conn.query(`INSERT INTO ${table} VALUES ('kept', NULL, 41, 0)`);
      // Two providers starting together: both see the column missing, one ALTER wins.
      const p1 = createLockProvider({ driver, mysql: { ...c, table } });
      const p2 = createLockProvider({ driver, mysql: { ...c, table } });
      try {
        const [l1] = await Promise.all([
          p1.acquire('kept', { ttlMs: 10_000, holder: 'after the upgrade' }),
          p2.inspect(['other']),
        ]);
        // The row's fence sequence went on from where it was.
        expect(l1.fence).toBe(42);
        await expect(p2.inspect(['kept'])).resolves.toMatchObject([
          { held: true, holder: 'after the upgrade', fence: 42 },
        ]);
        await l1.release();
      } finally {
        await p1.close();
        await p2.close();
        await conn.query(`DROP TABLE IF EXISTS ${table}`);
        await conn.end();
      }
    });

    it('keeps locking, unlabelled, on an old table a user without ALTER may not change', async () => {
      const c = config.mysql!;
      const table = `baton_lock_noalter_${process.pid}`;
      const user = `baton_noalter_${process.pid}`;
      const conn = await createConnection({
        host: c.host,
        port: c.port,
        user: c.user,
        password: c.password,
        database: c.database,
      });
      await conn.query(`DROP TABLE IF EXISTS ${table}`);
      await conn.query(
        `CREATE TABLE ${table} (lock_key VARCHAR(191) NOT NULL PRIMARY KEY, holder CHAR(36) NULL,
         fence BIGINT UNSIGNED NOT NULL DEFAULT 0, expires_at BIGINT UNSIGNED NOT NULL DEFAULT 0)`,
      );
      await conn.query(`CREATE USER IF NOT EXISTS '${user}'@'%' IDENTIFIED BY 'pw-${user}'`);
      await conn.query(
        `GRANT SELECT, INSERT, UPDATE, CREATE ON ${c.database}.${table} TO '${user}'@'%'`,
      );
      const limited = createLockProvider({
        driver,
        mysql: { ...c, user, password: `pw-${user}`, table },
      });
      try {
        const lease = await limited.acquire('k', { ttlMs: 10_000, holder: 'no column for me' });
        await expect(limited.inspect(['k'])).resolves.toMatchObject([
          { held: true, holder: null, token: expect.any(String), fence: lease.fence },
        ]);
        await expect(limited.tryAcquire('k', { ttlMs: 1000 })).resolves.toBeNull();
        await lease.release();
        await expect(limited.inspect(['k'])).resolves.toMatchObject([{ held: false }]);
      } finally {
        await limited.close();
        await conn.query(`DROP USER IF EXISTS '${user}'@'%'`);
        await conn.query(`DROP TABLE IF EXISTS ${table}`);
        await conn.end();
      }
    });
  }
});
