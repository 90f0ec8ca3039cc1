import { Inject, Injectable, Logger } from '@nestjs/common';
import { KeyedMutex } from '@baton/task-contract';
import { Clock, TaskLog } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskChange, TaskModel, TasksRepository } from '../task-store';
import { REST, Step } from './engine-rules';
import { WaitReason, postponeChange } from './decide';

/**
 * The engine's writes of the tasks it drives: each a compare-and-set step on the row, made under
 * a per-task lock and from the newest row this process wrote (a lease renewal may have moved the
 * version on meanwhile), plus the steps that let a task rest.
 */
@Injectable()
export class TaskSteps {
  private readonly logger = new Logger('TaskEngine');
  /** Who the steps are logged as. */
  readonly actor: string;
  /** The newest row this process wrote per task it drives (lease renewals move the version). */
  private readonly latest = new Map<string, TaskModel>();
  private readonly stepLock = new KeyedMutex();
  /** Drives whose claim was handed back (shutdown): they write nothing more. */
  private readonly handedBack = new Set<string>();

  constructor(
    private readonly tasks: TasksRepository,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {
    this.actor = `scheduler:${config.instanceId}`;
  }

  /** Set once the claims were handed back (shutdown): a claim that comes back later goes too. */
  private closing: string | undefined;
  private readonly lateHandBacks = new Set<Promise<void>>();

  /**
   * A claim was taken: steps of this drive start from its row. After the hand-back (a claim
   * query that was in flight then), the claim is handed back at once and the drive writes
   * nothing: it would otherwise hold the task until its lease lapsed.
   */
  track(t: TaskModel): void {
    this.latest.set(t.taskId, t);
    if (!this.closing) return;
    const done = this.handBackOne(t.taskId, this.closing).then(() => undefined);
    this.lateHandBacks.add(done);
    void done.finally(() => this.lateHandBacks.delete(done));
  }

  /** Resolves once the hand-backs of claims that came back after `handBack` are written. */
  async handBacksWritten(): Promise<void> {
    while (this.lateHandBacks.size > 0) await Promise.allSettled([...this.lateHandBacks]);
  }

  /** The drive ended: nothing of it is kept. */
  forget(taskId: string): void {
    this.latest.delete(taskId);
    this.handedBack.delete(taskId);
  }

  /** Whether the drive's claim was handed back: it does nothing more. */
  isHandedBack(taskId: string): boolean {
    return this.handedBack.has(taskId);
  }

  /**
   * Gives up the claims of every drive still under way (the process is shutting down): each task
   * is due now with no owner, so another instance claims it at once rather than after the claim
   * lease, and the drive here writes nothing more. Resolves with how many were handed back.
   */
  async handBack(why: string): Promise<number> {
    this.closing = why;
    const done = await Promise.all([...this.latest.keys()].map((id) => this.handBackOne(id, why)));
    return done.filter(Boolean).length;
  }

  private handBackOne(id: string, why: string): Promise<boolean> {
    const tracked = this.latest.get(id);
    if (!tracked || this.handedBack.has(id)) return Promise.resolve(false);
    // At once, not under the lock: a step queued behind this one must not write.
    this.handedBack.add(id);
    return this.stepLock.run(id, async () => {
      const change = {
        patch: { owner: null, leaseUntil: null, dueAt: this.clock.now() },
        reason: why,
        note: true,
        actor: this.actor,
      };
      try {
        // The newest row this process wrote (a step in flight may have moved it on); when
        // someone else moved it meanwhile (a worker's report), the row as it stands now.
        let t: TaskModel | undefined = this.latest.get(id) ?? tracked;
        for (let tries = 0; t && tries < 3; tries++) {
          if (t.owner !== this.config.instanceId) return false;
          if (await this.tasks.apply(t, change, this.clock.now())) return true;
          t = await this.tasks.findById(id);
        }
        this.logger.warn(`handing back the claim of ${id}: the task kept changing`);
      } catch (err) {
        this.logger.warn(`handing back the claim of ${id}: ${String(err)}`);
      }
      return false;
    });
  }

  /** The newest row of a task this process drives, if it drives it. */
  latestOf(taskId: string): TaskModel | undefined {
    return this.latest.get(taskId);
  }

  /** Resolves once a step in flight for the task (a renewal) has finished. */
  async settled(taskId: string): Promise<void> {
    await this.stepLock.run(taskId, async () => undefined);
  }

  /** One compare-and-set step; undefined when the task changed under us (we stop driving). */
  async step(
    t: TaskModel,
    change: Omit<TaskChange, 'actor'>,
    actor = this.actor,
    onlyIf?: (latest: TaskModel) => boolean,
  ): Promise<TaskModel | undefined> {
    return this.stepLock.run(t.taskId, async () => {
      if (this.handedBack.has(t.taskId)) return undefined;
      // A lease renewal may have moved the row on since `t` was read: only the lease changed then.
      const latest = this.latest.get(t.taskId);
      if (onlyIf && !onlyIf(latest ?? t)) return undefined;
      const base =
        latest && latest.version > t.version
          ? { ...t, version: latest.version, leaseUntil: latest.leaseUntil }
          : t;
      const next = await this.tasks.apply(base, { ...change, actor }, this.clock.now());
      if (next) this.latest.set(t.taskId, next);
      else
        this.logger.debug(
          TaskLog.line(t.taskId, t.attempt, `task ${t.taskId}: lost the race for the task`),
        );
      return next;
    });
  }

  /**
   * The task may not start yet. A first start waits in POSTPONE; a retry (FAIL) or a re-create
   * (NONE) waits where it is, since the table has no move from there to POSTPONE (and a retry
   * stays in the retry lane): the wait and its reason are logged as an event either way.
   *
   * An attempt already bound to its worker (a re-drive of CREATE or PREPARE that cannot go on
   * there) is given up: not counted against max_retry, and its worker is told to drop it.
   */
  async postpone(t: TaskModel, until: number, code: WaitReason, why: string): Promise<Step> {
    await this.step(t, postponeChange(t, until, code, why, this.clock.now()));
    return REST;
  }

  /** Look again after a poll interval, the claim given up. */
  async retryLater(t: TaskModel, why: string): Promise<Step> {
    await this.step(t, {
      patch: {
        dueAt: this.clock.now() + this.config.checker.pollIntervalMs,
        owner: null,
        leaseUntil: null,
      },
      reason: why,
    });
    this.logger.warn(TaskLog.line(t.taskId, t.attempt, `task ${t.taskId}: ${why}`));
    return REST;
  }

  /** Nothing to do until someone acts: the claim given up, nothing due. */
  async release(t: TaskModel, why: string): Promise<Step> {
    await this.step(t, { patch: { owner: null, leaseUntil: null, dueAt: null }, reason: why });
    return REST;
  }
}
