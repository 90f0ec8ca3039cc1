import { systemClock } from '@baton/time';
import { ContractErrorCode } from '@baton/task-contract';
import { DataSource } from 'typeorm';
import { loadSchedulerConfig } from '../config';
import { createDataSource } from '../database';
import {
  TestDatabase,
  mysqlTestDatabase,
  sqliteTestDatabase,
} from '../database/testing/test-databases';
import { ENTITIES } from '../entities';
import { TailedTaskEvent, TaskEventTail } from '../task-store';
import { newTask } from '../task-store/testing/new-task';
import { taskStoreStack } from '../task-store/testing/task-store-stack';
import { TaskChangeStream, TaskChangeWatcher } from './task-change-stream';
import { eventually } from '../../../../test/support/processes';

/** A watcher that keeps what it is sent. */
class Seen implements TaskChangeWatcher {
  readonly ids: number[] = [];
  readonly marks: number[] = [];
  ended = false;
  constructor(readonly filter: TaskChangeWatcher['filter'] = {}) {}
  send(events: readonly TailedTaskEvent[], mark: number): void {
    this.ids.push(...events.map((e) => e.id));
    this.marks.push(mark);
  }
  reset(mark: number): void {
    this.marks.push(mark);
  }
  end(): void {
    this.ended = true;
  }
  get mark(): number {
    return this.marks[this.marks.length - 1];
  }
}

const until = (test: () => boolean, what: string): Promise<true> =>
  eventually(async () => (test() ? true : undefined), 20_000, what);

/**
 * The live stream's reading of the lifecycle log against a real database: ids a read skipped
 * (their transaction had not committed) are delivered when they appear, and the place a watcher
 * is told to resume from stays below them, so a reconnect never skips an event.
 */
describe.each([
  ['sqlite', async () => sqliteTestDatabase()],
  ['mysql', mysqlTestDatabase],
])('the live stream of task changes on %s', (_name, make: () => Promise<TestDatabase>) => {
  let testDb: TestDatabase;
  let ds: DataSource;
  let exec: ReturnType<typeof taskStoreStack>['exec'];
  let sql: ReturnType<typeof taskStoreStack>['sql'];
  let taskId: string;
  let stream: TaskChangeStream;

  /** Writes a lifecycle event with this very id (as a transaction that took it would). */
  const event = (id: number): Promise<unknown> =>
    exec(
      `INSERT INTO baton_task_event (id, task_id, from_status, to_status, reason, actor, attempt, created_at)
       VALUES (?, ?, 'INIT', 'INIT', 'spec', 'spec', 0, ?)`,
      [id, taskId, Date.now()],
    );
  const latest = async (): Promise<number> => {
    const { records } = await exec('SELECT MAX(id) AS id FROM baton_task_event');
    return Number((records[0] as { id: unknown }).id);
  };

  beforeAll(async () => {
    testDb = await make();
    ds = createDataSource(testDb.config, ENTITIES);
    await ds.initialize();
    await ds.runMigrations();
    const store = taskStoreStack(ds);
    exec = store.exec;
    sql = store.sql;
    taskId = (await store.tasks.insert(newTask(), 'created', 'spec')).taskId;
  });

  beforeEach(() => {
    stream = new TaskChangeStream(
      new TaskEventTail(sql),
      loadSchedulerConfig({ BATON_AUTH_MODE: 'none', BATON_STREAM_POLL_MS: '50' }),
      systemClock,
    );
  });

  afterEach(() => stream.onModuleDestroy());

  afterAll(async () => {
    await ds?.destroy();
    await testDb?.drop();
  });

  it('delivers a skipped id once it appears, and keeps the resume mark below it meanwhile', async () => {
    const w = new Seen();
    const leave = await stream.join(w);
    const base = await latest();
    await event(base + 1);
    await event(base + 3); // base + 2: taken by a transaction not committed yet
    await until(() => w.ids.includes(base + 3), 'the events after the gap');
    expect(w.ids).not.toContain(base + 2);
    expect(w.mark).toBe(base + 1);
    await event(base + 2);
    await until(() => w.ids.includes(base + 2), 'the late event');
    await event(base + 4);
    await until(() => w.ids.includes(base + 4), 'the next event');
    expect(w.mark).toBe(base + 4);
    leave();
    expect(stream.size).toBe(0);
  });

  it('replays what a reconnecting watcher missed, the late commit below its mark included', async () => {
    const first = new Seen();
    const leave = await stream.join(first);
    const base = await latest();
    await event(base + 1);
    await event(base + 3);
    await until(() => first.ids.includes(base + 3), 'the events after the gap');
    const resumeFrom = first.mark;
    expect(resumeFrom).toBe(base + 1);
    // The last watcher leaves: the instance forgets its gaps. The late one commits meanwhile.
    leave();
    await event(base + 2);
    const again = new Seen();
    await stream.join(again, resumeFrom);
    expect(again.ids).toEqual([base + 2, base + 3]);
  });

  it('filters by task id, and tells a watcher of a quiet filter the new mark too', async () => {
    const other = new Seen({ taskIds: new Set(['someone-else']) });
    await stream.join(other);
    const base = await latest();
    await event(base + 1);
    await until(() => other.mark === base + 1, 'the mark moving');
    expect(other.ids).toEqual([]);
  });

  it("tells a watcher of one tenant nothing of other tenants' events, not even the mark", async () => {
    const tenant = new Seen({ tenant: 'team-a', taskIds: new Set([taskId]) });
    const fleet = new Seen({ taskIds: new Set(['someone-else']) });
    await stream.join(tenant);
    await stream.join(fleet);
    const joined = tenant.marks.length;
    const base = await latest();
    // The task is the default tenant's: none of team-a's.
    for (let i = 1; i <= 5; i++) await event(base + i);
    await until(() => fleet.mark === base + 5, 'the fleet watcher hearing the mark');
    expect(tenant.ids).toEqual([]);
    expect(tenant.marks).toHaveLength(joined);
  });

  it('ends every watcher at shutdown, and refuses new ones', async () => {
    const w = new Seen();
    await stream.join(w);
    stream.onModuleDestroy();
    expect(w.ended).toBe(true);
    await expect(stream.join(new Seen())).rejects.toMatchObject({
      code: ContractErrorCode.NOT_READY,
    });
  });

  it('refuses a watcher past BATON_STREAM_MAX_WATCHERS, and frees the place when one leaves', async () => {
    stream = new TaskChangeStream(
      new TaskEventTail(sql),
      loadSchedulerConfig({ BATON_AUTH_MODE: 'none', BATON_STREAM_MAX_WATCHERS: '1' }),
      systemClock,
    );
    const leave = await stream.join(new Seen());
    await expect(stream.join(new Seen())).rejects.toMatchObject({
      code: ContractErrorCode.OVERLOADED,
    });
    leave();
    await stream.join(new Seen());
    expect(stream.size).toBe(1);
  });
});
