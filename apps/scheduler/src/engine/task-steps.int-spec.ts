import { ManualClock } from '@baton/time';
import { SchedulerConfig } from '../config';
import { TasksRepository, TaskModel } from '../task-store';
import { insertClaimed } from '../task-store/testing/new-task';
import { migratedSqlite } from '../database/testing/test-databases';
import { taskStoreStack } from '../task-store/testing/task-store-stack';
import { DRIVABLE } from './engine-rules';
import { TaskSteps } from './task-steps';

const ME = 's1';
const WHY = 'scheduler s1 is shutting down: claim handed back';

/**
 * The hand-back of a scheduler that stops with drives under way (a deploy): every claim it
 * holds ends with no owner, due now, for another instance to take at once. On SQLite with a
 * ManualClock; the claims are the store's own.
 */
describe('TaskSteps.handBack', () => {
  let db: Awaited<ReturnType<typeof migratedSqlite>>;
  let tasks: TasksRepository;
  let clock: ManualClock;
  let steps: TaskSteps;

  beforeAll(async () => {
    db = await migratedSqlite();
    tasks = taskStoreStack(db.ds).tasks;
  });

  afterAll(async () => {
    await db?.close();
  });

  beforeEach(() => {
    clock = new ManualClock();
    steps = new TaskSteps(tasks, clock, { instanceId: ME } as SchedulerConfig);
  });

  /** A stored task, due now, claimed by this instance as the runner claims. */
  const claimed = (): Promise<TaskModel> =>
    insertClaimed(tasks, ME, clock.now(), clock.now() + 30_000);

  const row = async (id: string): Promise<TaskModel> => (await tasks.findById(id))!;

  it('hands back a claim whose row someone else moved on meanwhile (a worker report)', async () => {
    const t = await claimed();
    steps.track(t);
    // A write this drive did not make: the row's version is past the one the drive knows.
    const moved = await tasks.apply(
      t,
      { patch: { heartbeatAt: clock.now() }, reason: 'heartbeat', actor: 'worker:w1' },
      clock.now(),
    );
    expect(moved!.version).toBeGreaterThan(t.version);
    await expect(steps.handBack(WHY)).resolves.toBe(1);
    expect(await row(t.taskId)).toMatchObject({
      owner: null,
      leaseUntil: null,
      dueAt: clock.now(),
    });
    // The drive writes nothing more.
    await expect(steps.step(t, { patch: { heartbeatAt: 1 }, reason: 'late step' })).resolves.toBe(
      undefined,
    );
  });

  it('hands back a claim that came back after the hand-back (its query was in flight)', async () => {
    const early = await claimed();
    steps.track(early);
    const late = await claimed();
    await expect(steps.handBack(WHY)).resolves.toBe(1);
    // The claim query returns now: tracked, and handed back at once.
    steps.track(late);
    expect(steps.isHandedBack(late.taskId)).toBe(true);
    await expect(
      steps.step(late, { patch: { heartbeatAt: 1 }, reason: 'first step of the drive' }),
    ).resolves.toBe(undefined);
    await steps.handBacksWritten();
    for (const id of [early.taskId, late.taskId]) {
      expect(await row(id)).toMatchObject({ owner: null, leaseUntil: null });
    }
  });

  it('leaves alone a task no longer its own (another instance took it after the lease)', async () => {
    const t = await claimed();
    steps.track(t);
    // The lease lapsed and s2 claimed it.
    const [theirs] = await tasks.claimMany(
      [t.taskId],
      's2',
      clock.now() + 60_000,
      clock.now() + 90_000,
      DRIVABLE,
    );
    expect(theirs).toMatchObject({ owner: 's2' });
    await expect(steps.handBack(WHY)).resolves.toBe(0);
    expect(await row(t.taskId)).toMatchObject({ owner: 's2', leaseUntil: clock.now() + 90_000 });
  });
});
