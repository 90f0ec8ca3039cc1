import { ManualClock } from '@baton/time';
import { SchedulerConfig } from '../config';
import { Metrics } from '../metrics';
import { TasksRepository, TaskModel } from '../task-store';
import { insertClaimed } from '../task-store/testing/new-task';
import { migratedSqlite } from '../database/testing/test-databases';
import { taskStoreStack } from '../task-store/testing/task-store-stack';
import { DRIVABLE } from './engine-rules';
import { LeaseKeeper } from './lease-keeper';
import { TaskSteps } from './task-steps';

const ME = 's1';
const LEASE = 3000;
const THIRD = LEASE / 3;

/**
 * The renewals of a claim while a drive goes on, on SQLite with a ManualClock: when a third of the
 * lease on the row is gone (at once for a claim that came back late), one at a time, and counted
 * only when the claim was still the drive's to renew.
 */
describe('LeaseKeeper', () => {
  let db: Awaited<ReturnType<typeof migratedSqlite>>;
  let tasks: TasksRepository;
  let clock: ManualClock;
  let steps: TaskSteps;
  let metrics: Metrics;
  let keeper: LeaseKeeper;

  beforeAll(async () => {
    db = await migratedSqlite();
    tasks = taskStoreStack(db.ds).tasks;
  });

  afterAll(async () => {
    await db?.close();
  });

  beforeEach(() => {
    clock = new ManualClock();
    const config = {
      instanceId: ME,
      runner: { claimLeaseMs: LEASE, callTimeoutMs: 1000 },
    } as SchedulerConfig;
    steps = new TaskSteps(tasks, clock, config);
    metrics = new Metrics();
    keeper = new LeaseKeeper(steps, clock, config, metrics);
  });

  /** A stored task claimed by this instance with the lease set at `leaseFrom`, as a drive gets it. */
  const claimed = async (leaseFrom = clock.now()): Promise<TaskModel> => {
    const row = await insertClaimed(tasks, ME, clock.now(), leaseFrom + LEASE);
    steps.track(row);
    return row;
  };

  const leaseOf = async (id: string): Promise<number | null> =>
    (await tasks.findById(id))!.leaseUntil;
  const count = (result: string): number => metrics.get('baton_lease_renewals_total', { result });

  it('renews a claim that came back late at once, before its lease lapses', async () => {
    // The claim's statement waited 2.9 s on a busy database: 0.1 s of its lease is left.
    const start = clock.now();
    await clock.advance(LEASE - 100);
    const t = await claimed(start);
    const renewer = keeper.renewWhileDriving(t, undefined);
    await clock.advance(0);
    await steps.settled(t.taskId);
    expect(await leaseOf(t.taskId)).toBe(clock.now() + LEASE);
    expect(count('renewed')).toBe(1);
    await renewer.stop();
  });

  it('renews a fresh claim when a third of its lease is gone, not before', async () => {
    const t = await claimed();
    const renewer = keeper.renewWhileDriving(t, undefined);
    await clock.advance(THIRD - 1);
    expect(await leaseOf(t.taskId)).toBe(t.leaseUntil);
    await clock.advance(1);
    await steps.settled(t.taskId);
    expect(await leaseOf(t.taskId)).toBe(clock.now() + LEASE);
    // And again a third of the new lease later: one renewal per third, however long the drive.
    await clock.advance(THIRD * 6);
    await steps.settled(t.taskId);
    expect(count('renewed')).toBe(7);
    expect(await leaseOf(t.taskId)).toBe(clock.now() + LEASE);
    await renewer.stop();
  });

  it('counts no loss once the drive itself let the task rest (its claim given up)', async () => {
    const t = await claimed();
    const renewer = keeper.renewWhileDriving(t, undefined);
    // The drive's last step: the task waits, with no owner.
    await steps.step(t, {
      patch: { owner: null, leaseUntil: null, dueAt: clock.now() + 60_000 },
      reason: 'waiting',
    });
    await clock.advance(THIRD * 3);
    await steps.settled(t.taskId);
    expect(count('lost')).toBe(0);
    expect(count('renewed')).toBe(0);
    await renewer.stop();
  });

  it('renews nothing more once stopped, even with a renewal in flight when it stops', async () => {
    const t = await claimed();
    const renewer = keeper.renewWhileDriving(t, undefined);
    // The first renewal's write is held in flight (a slow database) while the drive ends.
    let release: (row: TaskModel | undefined) => void = () => undefined;
    const step = jest
      .spyOn(steps, 'step')
      .mockImplementationOnce(() => new Promise((resolve) => (release = resolve)));
    await clock.advance(THIRD);
    expect(step).toHaveBeenCalledTimes(1);
    await renewer.stop();
    release(await tasks.findById(t.taskId));
    await clock.advance(THIRD * 6);
    expect(step).toHaveBeenCalledTimes(1);
    expect(clock.pending()).toBe(0);
    step.mockRestore();
  });

  it('counts no loss for a claim the shutdown handed back', async () => {
    const t = await claimed();
    const renewer = keeper.renewWhileDriving(t, undefined);
    await expect(steps.handBack('scheduler s1 is shutting down')).resolves.toBe(1);
    await clock.advance(THIRD * 3);
    await steps.settled(t.taskId);
    expect(count('lost')).toBe(0);
    expect(await tasks.findById(t.taskId)).toMatchObject({ owner: null });
    await renewer.stop();
  });

  it('counts a claim another instance took as lost, and tries again a third later, not at once', async () => {
    const t = await claimed();
    const renewer = keeper.renewWhileDriving(t, undefined);
    // This process stalled past the lease; s2 took the task.
    clock.stall(LEASE + 1);
    const [theirs] = await tasks.claimMany(
      [t.taskId],
      's2',
      clock.now(),
      clock.now() + 60_000,
      DRIVABLE,
    );
    expect(theirs).toMatchObject({ owner: 's2' });
    await clock.advance(0);
    await steps.settled(t.taskId);
    expect(count('lost')).toBe(1);
    await clock.advance(THIRD * 3);
    await steps.settled(t.taskId);
    expect(count('lost')).toBe(4);
    expect(await tasks.findById(t.taskId)).toMatchObject({ owner: 's2' });
    await renewer.stop();
  });
});
