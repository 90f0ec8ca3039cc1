import { LockProvider, createLockProvider } from '@baton/locks';
import { TaskStatus } from '@baton/task-contract';
import { ManualClock } from '@baton/time';
import { Clock } from '../common';
import { SchedulerConfig } from '../config';
import { OWN_LEASE_WAIT, ResourceLeases, TaskEngine } from '../engine';
import { QueueLanes, createQueueDriver } from '../queue';
import { TaskModel, TasksRepository, holdsLockKeys } from '../task-store';
import { newTask } from '../task-store/testing/new-task';
import { migratedSqlite } from '../database/testing/test-databases';
import { taskStoreStack } from '../task-store/testing/task-store-stack';
import { CheckerService } from './checker.service';

/**
 * The Checker lets go of a lock lease this instance keeps for a task whose row says it holds no
 * key, wherever the task went on: the lease was taken by a drive here that then lost its claim
 * (a stall past the claim lease), another instance found the key "held by" the task itself and
 * postponed it, and only this instance could ever free the key. Seen in `chaos` on a loaded box:
 * 140 tasks waiting on four keys for five minutes. On SQLite, the local lock driver and a
 * ManualClock; a second ResourceLeases stands for another instance on the same lock backend.
 */
describe('Checker: leases of tasks that hold no key by their state', () => {
  let db: Awaited<ReturnType<typeof migratedSqlite>>;
  let tasks: TasksRepository;
  let clock: ManualClock;
  let locks: LockProvider;
  let here: ResourceLeases;
  let there: ResourceLeases;
  const driving = new Set<string>();
  const engine = { isDriving: (id: string) => driving.has(id) } as unknown as TaskEngine;
  let lanes: QueueLanes;

  const config = (instanceId: string): SchedulerConfig =>
    ({ instanceId, checker: { intervalMs: 1000 } }) as SchedulerConfig;
  const checker = (repo: TasksRepository = tasks, l: QueueLanes = lanes): CheckerService =>
    new CheckerService(repo, here, engine, l, clock as unknown as Clock, config('a'));

  beforeAll(async () => {
    db = await migratedSqlite();
    tasks = taskStoreStack(db.ds).tasks;
  });

  afterAll(async () => {
    await db?.close();
  });

  beforeEach(() => {
    clock = new ManualClock();
    locks = createLockProvider({ driver: 'local' }, clock);
    here = new ResourceLeases(locks, config('a'));
    there = new ResourceLeases(locks, config('b'));
    driving.clear();
    const memory = () => createQueueDriver({ driver: 'memory' } as never, clock);
    lanes = { main: memory(), retry: memory(), overflow: memory() } as unknown as QueueLanes;
  });

  afterEach(async () => {
    await locks.close();
  });

  /** A stored task in `status`, whose key this instance took (as a start here did). */
  const heldHere = async (over: Partial<TaskModel>, key: string): Promise<TaskModel> => {
    const t = newTask({ lockKeys: [key], ...over });
    await tasks.insert(t, 'created', 'api');
    await expect(here.acquire(t.taskId, [key], 60_000)).resolves.toBe(true);
    return t;
  };
  /** Whether another instance's start of another task could take the key now. */
  const freeForOthers = async (key: string): Promise<boolean> => {
    const other = `other-${key}`;
    const took = await there.acquire(other, [key], 60_000);
    if (took) await there.release(other);
    return took;
  };

  it.each([
    ['POSTPONE (postponed elsewhere: its key "held by" itself)', { status: TaskStatus.POSTPONE }],
    ['INIT', { status: TaskStatus.INIT }],
    ['FINISH (ended elsewhere)', { status: TaskStatus.FINISH, outcome: TaskStatus.SUCCESS }],
    ['FAIL with no outcome (a retry that waits)', { status: TaskStatus.FAIL }],
    ['PAUSE before any attempt', { status: TaskStatus.PAUSE, pausedFrom: TaskStatus.INIT }],
  ] as const)('lets go of the key of a task in %s', async (_, over) => {
    const key = `k-${over.status}`;
    const t = await heldHere(over, key);
    expect(await freeForOthers(key)).toBe(false);
    await checker().checkOnce();
    expect(here.heldTaskIds()).not.toContain(t.taskId);
    expect(await freeForOthers(key)).toBe(true);
  });

  it.each([
    ['CREATE', { status: TaskStatus.CREATE, attempt: 1 }],
    ['RUNNING', { status: TaskStatus.RUNNING, attempt: 1 }],
    ['SUCCESS (not cleaned yet)', { status: TaskStatus.SUCCESS, attempt: 1 }],
    ['FAIL with its outcome', { status: TaskStatus.FAIL, outcome: TaskStatus.FAIL }],
    ['PAUSE mid-attempt', { status: TaskStatus.PAUSE, pausedFrom: TaskStatus.RUNNING }],
  ] as const)('keeps the key of a task in %s', async (_, over) => {
    const key = `keep-${over.status}-${String('outcome' in over)}`;
    const t = await heldHere(over, key);
    await checker().checkOnce();
    expect(here.heldTaskIds()).toContain(t.taskId);
    expect(await freeForOthers(key)).toBe(false);
  });

  /** What a start on another instance writes when this lease blocks the task's own start. */
  const ownLeaseWait = (key: string) => ({
    code: 'lock_key',
    why: `${OWN_LEASE_WAIT}, let go by its instance: ${key}`,
    since: 1,
    last: 1,
    checks: 1,
  });

  it.each([
    ['NONE (its worker lost it; a re-create waits where it is)', TaskStatus.NONE],
    ['SUCCESS (a permanent task between lives)', TaskStatus.SUCCESS],
  ] as const)(
    'lets go of the key of a task in %s whose start elsewhere found it held by this lease',
    async (_, status) => {
      const key = `own-${status}`;
      const t = await heldHere({ status, attempt: 1, waiting: ownLeaseWait(key) }, key);
      await checker().checkOnce();
      expect(here.heldTaskIds()).not.toContain(t.taskId);
      expect(await freeForOthers(key)).toBe(true);
    },
  );

  it('keeps the key of a task in a holding state that waits on something else', async () => {
    const t = await heldHere(
      {
        status: TaskStatus.SUCCESS,
        attempt: 1,
        waiting: { code: 'no_worker', why: 'no demo.echo worker', since: 1, last: 1, checks: 1 },
      },
      'k-other-wait',
    );
    await checker().checkOnce();
    expect(here.heldTaskIds()).toContain(t.taskId);
  });

  it('keeps the key of a waiting task while a drive here is under way (it may be about to use it)', async () => {
    const t = await heldHere({ status: TaskStatus.POSTPONE }, 'k-driving');
    driving.add(t.taskId);
    await checker().checkOnce();
    expect(await freeForOthers('k-driving')).toBe(false);
    driving.delete(t.taskId);
    await checker().checkOnce();
    expect(await freeForOthers('k-driving')).toBe(true);
  });

  it('keeps the key when a start here used the lease while the row was being read', async () => {
    const t = await heldHere({ status: TaskStatus.POSTPONE }, 'k-raced');
    // A drive began, took the lease (still held here) and ended while the Checker read a row
    // that predates it: the row says POSTPONE, the task now runs on the key.
    const racing = new Proxy(tasks, {
      get: (target, prop, receiver) =>
        prop === 'findByIds'
          ? async (ids: readonly string[]) => {
              const rows = await target.findByIds(ids);
              await here.acquire(t.taskId, t.lockKeys, 60_000);
              return rows;
            }
          : Reflect.get(target, prop, receiver),
    });
    await checker(racing).checkOnce();
    expect(await freeForOthers('k-raced')).toBe(false);
  });

  it('says a task holds its key exactly when the rows do (holdsLockKeys is lockKeyHolder for one task)', async () => {
    const cases: Partial<TaskModel>[] = [
      ...Object.values(TaskStatus).map((status) => ({ status })),
      { status: TaskStatus.FAIL, outcome: TaskStatus.FAIL },
      { status: TaskStatus.PAUSE, pausedFrom: TaskStatus.RUNNING },
      { status: TaskStatus.PAUSE, pausedFrom: TaskStatus.INIT },
    ];
    for (const [i, over] of cases.entries()) {
      const key = `agree-${i}`;
      const t = newTask({ lockKeys: [key], ...over });
      await tasks.insert(t, 'created', 'api');
      const byRows = (await tasks.lockKeyHolder([key], 'someone-else')) === t.taskId;
      expect({ over, holds: holdsLockKeys(t) }).toEqual({ over, holds: byRows });
    }
  });

  it('lets go of leases even when a queue lane cannot be read (Redis down or flushed mid-call)', async () => {
    const t = await heldHere({ status: TaskStatus.FINISH }, 'k-lane-down');
    const broken = {
      ...lanes,
      retry: {
        requeueExpired: () => Promise.reject(new Error('ECONNREFUSED')),
      },
    } as unknown as QueueLanes;
    await checker(tasks, broken).checkOnce();
    expect(here.heldTaskIds()).not.toContain(t.taskId);
    expect(await freeForOthers('k-lane-down')).toBe(true);
  });
});
