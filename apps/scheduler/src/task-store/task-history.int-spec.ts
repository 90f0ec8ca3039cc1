import { TaskOutcome, TaskStatus } from '@baton/task-contract';
import { DataSource } from 'typeorm';
import { createDataSource } from '../database';
import {
  TestDatabase,
  mysqlTestDatabase,
  sqliteTestDatabase,
} from '../database/testing/test-databases';
import { ENTITIES } from '../entities';
import { MINUTE_MS } from './task-history.repository';
import { newTask } from './testing/new-task';
import { taskStoreStack } from './testing/task-store-stack';

describe.each([
  ['sqlite', async () => sqliteTestDatabase()],
  ['mysql', mysqlTestDatabase],
])('tasks finished per minute on %s', (_name, make: () => Promise<TestDatabase>) => {
  let testDb: TestDatabase;
  let ds: DataSource;
  let store: ReturnType<typeof taskStoreStack>;

  beforeAll(async () => {
    testDb = await make();
    ds = createDataSource(testDb.config, ENTITIES);
    await ds.initialize();
    await ds.runMigrations();
    store = taskStoreStack(ds);
  });

  afterAll(async () => {
    await ds?.destroy();
    await testDb?.drop();
  });

  /** A task that ended with `outcome`, moved to FINISH at `at` through the store's own writes. */
  const finish = async (taskType: string, outcome: TaskStatus, at: number): Promise<void> => {
    const task = await store.tasks.insert(newTask({ taskType, status: outcome }), 'made', 'test');
    const done = await store.tasks.apply(
      task,
      {
        to: TaskStatus.FINISH,
        patch: { outcome: outcome as string as TaskOutcome, finishedAt: at },
        reason: 'ended',
        actor: 'test',
      },
      at,
    );
    expect(done?.status).toBe(TaskStatus.FINISH);
  };

  it('counts each move to FINISH in its minute, by type and outcome, and nothing else', async () => {
    const base = Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS - 10 * MINUTE_MS;
    // Many at once: the writes land in group commits (and on MySQL in shards of their choice).
    await Promise.all([
      ...Array.from({ length: 20 }, () => finish('demo.echo', TaskStatus.SUCCESS, base + 1_000)),
      ...Array.from({ length: 3 }, () => finish('demo.echo', TaskStatus.FAIL, base + 59_999)),
      finish('demo.sleep', TaskStatus.SUCCESS, base + MINUTE_MS),
    ]);
    // A move that is not to FINISH counts nothing.
    const other = await store.tasks.insert(newTask(), 'made', 'test');
    await store.tasks.apply(
      other,
      { to: TaskStatus.POSTPONE, reason: 'later', actor: 'test' },
      base,
    );

    const rows = await store.history.since(base);
    expect(rows.map((r) => [r.minute - base, r.taskType, r.outcome, r.n])).toEqual([
      [0, 'demo.echo', 'FAIL', 3],
      [0, 'demo.echo', 'SUCCESS', 20],
      [MINUTE_MS, 'demo.sleep', 'SUCCESS', 1],
    ]);
    expect(await store.history.since(base + MINUTE_MS)).toHaveLength(1);
  });

  it('prunes the minutes before a time, and only those', async () => {
    const old = Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS - 400 * MINUTE_MS;
    await finish('demo.echo', TaskStatus.SUCCESS, old + 5);
    expect((await store.history.since(old)).some((r) => r.minute === old)).toBe(true);
    const kept = (await store.history.since(old + MINUTE_MS)).length;
    expect(await store.history.prune(old + MINUTE_MS)).toBeGreaterThan(0);
    expect(await store.history.since(0)).toHaveLength(kept);
  });
});
