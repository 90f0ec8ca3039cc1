import { systemClock } from '@baton/time';
import { TaskStatus } from '@baton/task-contract';
import { DataSource } from 'typeorm';
import { createDataSource, TransactionRunner } from '../database';
import { ENTITIES } from '../entities';
import {
  TestDatabase,
  mysqlTestDatabase,
  sqliteTestDatabase,
} from '../database/testing/test-databases';
import { Metrics } from '../metrics';
import { GroupCommitWriter } from './group-commit.writer';
import { SqlRunner } from './sql-runner';
import { TaskChangeFeed } from './task-change-feed';
import { TaskLogRepository } from './task-log.repository';
import { searchWords } from './task-search';
import { TasksRepository } from './tasks.repository';
import { TaskFilter, TaskModel, TaskOrder, TaskSeek } from './task.model';
import { newTask } from './testing/new-task';

describe.each([
  ['sqlite', async () => sqliteTestDatabase()],
  ['mysql', mysqlTestDatabase],
])('the task list on %s', (name, make: () => Promise<TestDatabase>) => {
  let testDb: TestDatabase;
  let ds: DataSource;
  let repo: TasksRepository;
  let sql: SqlRunner;

  beforeAll(async () => {
    testDb = await make();
    ds = createDataSource(testDb.config, ENTITIES);
    await ds.initialize();
    await ds.runMigrations();
    const tx = new TransactionRunner(ds, systemClock);
    sql = new SqlRunner(ds);
    const feed = new TaskChangeFeed(sql, tx);
    const log = new TaskLogRepository(ds, sql, feed);
    const writer = new GroupCommitWriter(ds, tx, sql, log, new Metrics());
    repo = new TasksRepository(ds, tx, sql, writer, log);
  });

  afterAll(async () => {
    await ds?.destroy();
    await testDb?.drop();
  });

  const ids = (ts: TaskModel[]): string[] => ts.map((t) => t.taskId);
  const fresh = (): string => `t${newTask().taskId}`;
  const list = async (
    filter: TaskFilter,
    order?: TaskOrder,
    after?: TaskSeek,
    limit = 100,
  ): Promise<string[]> => ids(await repo.list(filter, after, limit, order));

  it('filters by parent, control task, worker, outcome, attempts and name prefix', async () => {
    const tenant = fresh();
    const parent = newTask({ tenant, taskName: 'parent job' });
    const child1 = newTask({ tenant, parentTaskId: parent.taskId, taskName: 'Nightly a' });
    const child2 = newTask({ tenant, parentTaskId: parent.taskId, controlTaskId: parent.taskId });
    const w1 = newTask({ tenant, workerId: 'w-1', attempt: 3, taskName: 'Nightly b' });
    const w2 = newTask({ tenant, workerId: 'w-2', attempt: 1, outcome: TaskStatus.FAIL });
    const ok = newTask({ tenant, outcome: TaskStatus.SUCCESS, status: TaskStatus.FINISH });
    await repo.insertMany([parent, child1, child2, w1, w2, ok], 'c', 'api');

    await expect(list({ tenant, parentTaskId: parent.taskId })).resolves.toEqual([
      child2.taskId,
      child1.taskId,
    ]);
    await expect(list({ tenant, controlTaskId: parent.taskId })).resolves.toEqual([child2.taskId]);
    await expect(list({ tenant, workerId: 'w-1' })).resolves.toEqual([w1.taskId]);
    await expect(list({ tenant, attemptsMin: 1 })).resolves.toEqual([w2.taskId, w1.taskId]);
    await expect(list({ tenant, attemptsMin: 3 })).resolves.toEqual([w1.taskId]);
    await expect(list({ tenant, outcome: [TaskStatus.FAIL] })).resolves.toEqual([w2.taskId]);
    await expect(list({ tenant, namePrefix: 'Nightly' })).resolves.toEqual([
      w1.taskId,
      child1.taskId,
    ]);
    // Case counts in a prefix, and a prefix is not a LIKE pattern.
    await expect(list({ tenant, namePrefix: 'nightly' })).resolves.toEqual([]);
    await expect(list({ tenant, namePrefix: 'N%' })).resolves.toEqual([]);
    await expect(list({ tenant, taskId: w2.taskId })).resolves.toEqual([w2.taskId]);
    // Filters add up.
    await expect(list({ tenant, namePrefix: 'Nightly', attemptsMin: 2 })).resolves.toEqual([
      w1.taskId,
    ]);
    await expect(list({ tenant: fresh(), workerId: 'w-1' })).resolves.toEqual([]);
  });

  it('finds names by their words: any case and accents, word starts, every word', async () => {
    const tenant = fresh();
    const a = newTask({ tenant, taskName: 'Nightly BACKUP of orders_db' });
    const b = newTask({ tenant, taskName: 'réindex the backups' });
    const c = newTask({ tenant, taskName: 'reindex customers' });
    await repo.insertMany([a, b, c], 'c', 'api');
    const search = (text: string): Promise<string[]> =>
      list({ tenant, nameWords: searchWords(text) });
    await expect(search('backup')).resolves.toEqual([b.taskId, a.taskId]);
    await expect(search('REINDEX')).resolves.toEqual([c.taskId, b.taskId]);
    await expect(search('reindex back')).resolves.toEqual([b.taskId]);
    await expect(search('orders_db')).resolves.toEqual([a.taskId]);
    await expect(search('orders')).resolves.toEqual([a.taskId]);
    await expect(search('missing')).resolves.toEqual([]);
  });

  it('keeps the name index in step when tasks go', async () => {
    const tenant = fresh();
    const gone = newTask({ tenant, taskName: 'vanishing trick' });
    const kept = newTask({ tenant, taskName: 'vanishing act' });
    await repo.insertMany([gone, kept], 'c', 'api');
    await sql.exec(undefined, 'DELETE FROM baton_task WHERE task_id = ?', [gone.taskId]);
    await expect(list({ tenant, nameWords: ['vanishing'] })).resolves.toEqual([kept.taskId]);
    await expect(list({ tenant, nameWords: ['trick'] })).resolves.toEqual([]);
  });

  it('sorts by update time and priority, pages across ties without a gap or a repeat', async () => {
    const tenant = fresh();
    const t0 = Date.now();
    // Three priorities and three update times, several tasks on each.
    const tasks = Array.from({ length: 12 }, (_, i) =>
      newTask({ tenant, priority: i % 3, updatedAt: t0 + (i % 4) * 1000 }),
    );
    await repo.insertMany(tasks, 'c', 'api');
    for (const order of [
      { sort: 'priority', dir: 'desc' },
      { sort: 'priority', dir: 'asc' },
      { sort: 'updated', dir: 'desc' },
      { sort: 'updated', dir: 'asc' },
      { sort: 'created', dir: 'asc' },
      { sort: 'created', dir: 'desc' },
    ] as TaskOrder[]) {
      const key = (t: TaskModel): number =>
        order.sort === 'priority' ? t.priority : order.sort === 'updated' ? t.updatedAt : 0;
      const sign = order.dir === 'asc' ? 1 : -1;
      const expected = [...tasks]
        .sort((x, y) => sign * (key(x) - key(y) || (x.taskId < y.taskId ? -1 : 1)))
        .map((t) => t.taskId);
      const seen: string[] = [];
      let after: TaskSeek | undefined;
      for (let page = 0; page < 10; page++) {
        const rows = await repo.list({ tenant }, after, 5, order);
        seen.push(...ids(rows));
        if (rows.length < 5) break;
        const last = rows[rows.length - 1];
        after = { taskId: last.taskId, key: order.sort === 'created' ? undefined : key(last) };
      }
      expect({ order, seen }).toEqual({ order, seen: expected });
    }
  });

  it('keeps the name index (and on SQLite its triggers) after all migrations', async () => {
    if (name === 'sqlite') {
      const { records } = await sql.exec(
        undefined,
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'baton_task' ORDER BY name",
        [],
      );
      expect((records as { name: string }[]).map((r) => r.name)).toEqual([
        'baton_task_name_fts_delete',
        'baton_task_name_fts_insert',
        'baton_task_name_fts_rename',
      ]);
    } else {
      const { records } = await sql.exec(
        undefined,
        "SELECT index_type FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'baton_task' AND index_name = 'ft_task_name'",
        [],
      );
      expect(records).toEqual([{ index_type: 'FULLTEXT' }]);
    }
  });
});
