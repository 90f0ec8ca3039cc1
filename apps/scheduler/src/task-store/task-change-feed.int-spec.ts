import { systemClock } from '@baton/time';
import { TaskStatus } from '@baton/task-contract';
import { LockProvider, createLockProvider } from '@baton/locks';
import { DataSource } from 'typeorm';
import { Clock, ManualClock } from '../common';
import { createDataSource, TransactionRunner } from '../database';
import {
  TestDatabase,
  mysqlTestDatabase,
  sqliteTestDatabase,
} from '../database/testing/test-databases';
import { ENTITIES } from '../entities';
import { Metrics } from '../metrics';
import { GroupCommitWriter } from './group-commit.writer';
import { SqlRunner } from './sql-runner';
import {
  NewTaskStatusChange,
  TaskChangeConsumer,
  TaskChangeFeed,
  TaskStatusChange,
} from './task-change-feed';
import { TaskChangeRelay } from './task-change-relay';
import { TaskLogRepository } from './task-log.repository';
import { TasksRepository } from './tasks.repository';
import { newTask } from './testing/new-task';

/** A consumer that records what it is handed, and can be told to refuse. */
class Recorder implements TaskChangeConsumer {
  readonly seen: TaskStatusChange[] = [];
  refuse = 0;
  constructor(
    readonly name: string,
    private readonly filter: (c: NewTaskStatusChange) => boolean = () => true,
  ) {}
  wants(c: NewTaskStatusChange): boolean {
    return this.filter(c);
  }
  async handle(changes: readonly TaskStatusChange[]): Promise<void> {
    if (this.refuse > 0) {
      this.refuse--;
      throw new Error('not now');
    }
    this.seen.push(...changes);
  }
}

describe.each([
  ['sqlite', async () => sqliteTestDatabase()],
  ['mysql', mysqlTestDatabase],
])('the task change feed on %s', (_name, make: () => Promise<TestDatabase>) => {
  let testDb: TestDatabase;
  let ds: DataSource;
  let locks: LockProvider;
  let sql: SqlRunner;
  let tx: TransactionRunner;

  /** The relay's clock: a test moves it past a backoff instead of waiting. */
  let relayClock: Clock = systemClock;

  /** A task store wired as the module wires it, with these consumers subscribed. */
  function store(...consumers: TaskChangeConsumer[]) {
    const feed = new TaskChangeFeed(sql, tx);
    for (const c of consumers) feed.subscribe(c);
    const log = new TaskLogRepository(ds, sql, feed);
    const writer = new GroupCommitWriter(ds, tx, sql, log, new Metrics());
    const repo = new TasksRepository(ds, tx, sql, writer, log);
    const relay = new TaskChangeRelay(feed, sql, tx, relayClock, locks);
    return { feed, repo, relay };
  }

  const outbox = async (consumer: string): Promise<number> => {
    const { records } = await sql.exec(
      undefined,
      'SELECT COUNT(*) AS n FROM baton_task_change WHERE consumer = ?',
      [consumer],
    );
    return Number((records[0] as { n: unknown }).n);
  };

  beforeAll(async () => {
    testDb = await make();
    ds = createDataSource(testDb.config, ENTITIES);
    await ds.initialize();
    await ds.runMigrations();
    sql = new SqlRunner(ds);
    tx = new TransactionRunner(ds, systemClock);
    locks = createLockProvider({ driver: 'local' });
  });

  afterAll(async () => {
    await locks?.close();
    await ds?.destroy();
    await testDb?.drop();
  });

  it('writes each wanted move with the change, and hands it over in order per task, once handled deleted', async () => {
    const all = new Recorder('all');
    const finals = new Recorder('finals', (c) => c.to === TaskStatus.FINISH);
    const { repo, relay } = store(all, finals);
    const t0 = await repo.insert(newTask(), 'created', 'api');
    const t1 = await repo.apply(t0, { to: TaskStatus.CREATE, reason: 'c', actor: 's' }, 1);
    // Two moves in one write: each is a change of its own.
    const t2 = await repo.apply(
      t1!,
      {
        via: [TaskStatus.RUNNING, TaskStatus.SUCCESS],
        to: TaskStatus.FINISH,
        patch: { outcome: TaskStatus.SUCCESS },
        reason: 'r',
        actor: 's',
      },
      2,
    );
    // A note moves nothing: in the log, not in the feed.
    await repo.apply(t2!, { reason: 'a note', actor: 's', note: true }, 3);
    expect(await outbox('all')).toBe(5);
    expect(await outbox('finals')).toBe(1);

    await relay.deliverOnce();
    expect(all.seen.map((c) => [c.from, c.to])).toEqual([
      [null, TaskStatus.INIT],
      [TaskStatus.INIT, TaskStatus.CREATE],
      [TaskStatus.CREATE, TaskStatus.RUNNING],
      [TaskStatus.RUNNING, TaskStatus.SUCCESS],
      [TaskStatus.SUCCESS, TaskStatus.FINISH],
    ]);
    expect(all.seen.every((c) => c.taskId === t0.taskId && c.taskType === 'demo.echo')).toBe(true);
    expect(finals.seen.map((c) => [c.to, c.outcome])).toEqual([
      [TaskStatus.FINISH, TaskStatus.SUCCESS],
    ]);
    expect(await outbox('all')).toBe(0);
    expect(await outbox('finals')).toBe(0);
  });

  it('writes nothing for a change that lost its race', async () => {
    const all = new Recorder('race');
    const { repo } = store(all);
    const t0 = await repo.insert(newTask(), 'created', 'api');
    await expect(
      repo.apply(
        { ...t0, version: t0.version + 1 },
        { to: TaskStatus.CREATE, reason: 'c', actor: 's' },
        1,
      ),
    ).resolves.toBeUndefined();
    expect(await outbox('race')).toBe(1); // the creation only
  });

  it('keeps what a consumer refused and hands it over again later, nothing skipped', async () => {
    const flaky = new Recorder('flaky');
    const clock = new ManualClock(Date.now());
    relayClock = clock;
    const { repo, relay } = store(flaky);
    relayClock = systemClock;
    const t0 = await repo.insert(newTask(), 'created', 'api');
    flaky.refuse = 1;
    await relay.deliverOnce();
    expect(flaky.seen).toEqual([]);
    expect(await outbox('flaky')).toBe(1);
    await repo.apply(t0, { to: TaskStatus.CREATE, reason: 'c', actor: 's' }, 1);
    // Backing off: a pass right away hands nothing over.
    await relay.deliverOnce();
    expect(flaky.seen).toEqual([]);
    await clock.advance(600);
    await relay.deliverOnce();
    expect(flaky.seen.map((c) => c.to)).toEqual([TaskStatus.INIT, TaskStatus.CREATE]);
    expect(await outbox('flaky')).toBe(0);
  });

  it('relays a consumer from one process at a time: a second relay waits for the lease', async () => {
    const first = new Recorder('solo');
    const second = new Recorder('solo');
    const a = store(first);
    const b = store(second);
    await a.repo.insert(newTask(), 'created', 'api');
    await a.relay.deliverOnce();
    await b.repo.insert(newTask(), 'created', 'api');
    await b.relay.deliverOnce();
    // `a` holds the lease: `b` hands nothing over, and `a` takes what `b` wrote.
    expect(second.seen).toEqual([]);
    await a.relay.deliverOnce();
    expect(first.seen).toHaveLength(2);
    await a.relay.onApplicationShutdown();
    await b.repo.insert(newTask(), 'created', 'api');
    await b.relay.deliverOnce();
    expect(second.seen).toHaveLength(1);
  });

  it('refuses two consumers of one name', () => {
    const { feed } = store(new Recorder('twice'));
    expect(() => feed.subscribe(new Recorder('twice'))).toThrow(/already subscribed/);
  });

  // On SQLite transactions never overlap (one connection): the interleaving is MySQL's alone.
  const mysqlOnly = _name === 'mysql' ? it : undefined;
  mysqlOnly?.(
    'hands over a change whose transaction commits after a later one: ids commit out of order, none is skipped',
    async () => {
      const late = new Recorder('late');
      const { feed, repo, relay } = store(late);
      const slow = newTask({ taskName: 'slow commit' });
      const runner = ds.createQueryRunner();
      await runner.connect();
      await runner.startTransaction();
      // The slow transaction takes the lower id, and holds it uncommitted...
      await feed.write(runner.manager, [
        {
          task: slow,
          reason: 'created',
          fromOutcome: null,
          order: 0,
          taskId: slow.taskId,
          taskType: slow.taskType,
          tenant: slow.tenant,
          from: null,
          to: TaskStatus.INIT,
          outcome: null,
          attempt: 0,
          at: Date.now(),
        },
      ]);
      // ...while a later change commits with a higher id, and is handed over.
      const quick = await repo.insert(newTask({ taskName: 'quick commit' }), 'created', 'api');
      await relay.deliverOnce();
      expect(late.seen.map((c) => c.taskId)).toEqual([quick.taskId]);
      // The lower id commits last: a cursor past the higher one would never see it. The relay does.
      await runner.commitTransaction();
      await runner.release();
      await relay.deliverOnce();
      expect(late.seen.map((c) => c.taskId)).toEqual([quick.taskId, slow.taskId]);
      expect(late.seen[1].id).toBeLessThan(late.seen[0].id);
      expect(await outbox('late')).toBe(0);
    },
  );
});
