import { Inject, Injectable, Logger } from '@nestjs/common';
import { TaskStatus } from '@baton/task-contract';
import { TaskLog } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { QueueLanes } from '../queue';
import { TaskModel } from '../task-store';
import { TaskTypesService } from '../task-types';
import { AttemptStarter } from './attempt-starter';
import { Step, isRest } from './engine-rules';
import { route } from './decide';
import { FailurePolicy } from './failure-policy';
import { LeaseKeeper } from './lease-keeper';
import { TaskClaims } from './task-claims';
import { TaskCleanup } from './task-cleanup';
import { TaskPoller } from './task-poller';
import { TaskSteps } from './task-steps';

export { DRIVABLE, EARLY_CLAIM_MS } from './engine-rules';

/**
 * Drives tasks through docs/architecture.md. Every step is a compare-and-set on the task row; the
 * engine first takes the task's claim (owner + lease + a new fence) and hands that fence to the
 * worker on every call, so a scheduler that lost its claim is refused by the worker (409) and by
 * the database (version) alike. A task rests when it waits (POSTPONE, RUNNING async, retry
 * backoff, PAUSE) or is done (FINISH); the Dispatcher and Checker bring it back when due.
 *
 * This class only coordinates: which part acts on a task in each status. The parts: claims
 * (TaskClaims), steps and lease keeping (TaskSteps, LeaseKeeper), the start of an attempt
 * (AttemptStarter, AttemptRunner), polls (TaskPoller), failures, retries and timeouts
 * (FailurePolicy), permanent lives (PermanentLives), the end (TaskCleanup). What async workers
 * report on their own goes through WorkerReports.
 */
@Injectable()
export class TaskEngine {
  private readonly logger = new Logger('TaskEngine');
  private readonly driving = new Set<string>();
  /** Each step of a drive is logged (BATON_LOG_LEVEL=debug). */
  private readonly debug: boolean;

  constructor(
    private readonly claims: TaskClaims,
    private readonly steps: TaskSteps,
    private readonly leaseKeeper: LeaseKeeper,
    private readonly types: TaskTypesService,
    private readonly starter: AttemptStarter,
    private readonly poller: TaskPoller,
    private readonly policy: FailurePolicy,
    private readonly cleanup: TaskCleanup,
    private readonly lanes: QueueLanes,
    @Inject(SCHEDULER_CONFIG) config: SchedulerConfig,
  ) {
    this.debug = config.log.level === 'debug' || config.log.level === 'trace';
  }

  /** Claims the task if it is due and free, and drives it until it rests. */
  async drive(taskId: string): Promise<void> {
    // One drive per task at a time in this process (a task may sit in the queue twice).
    if (this.driving.has(taskId)) return;
    this.driving.add(taskId);
    try {
      await this.driveOnce(taskId);
    } finally {
      this.driving.delete(taskId);
    }
  }

  /**
   * The process is shutting down and drives are still under way after the grace period: their
   * claims are handed back (due now, no owner) for another instance to take at once.
   */
  handBackClaims(instanceId: string): Promise<number> {
    return this.steps.handBack(`scheduler ${instanceId} is shutting down: claim handed back`);
  }

  /** Resolves once claims that came back after the hand-back (queries in flight) went back too. */
  lateClaimsHandedBack(): Promise<void> {
    return this.steps.handBacksWritten();
  }

  /** True while this process drives the task (a drive under way may use the task's lease). */
  isDriving(taskId: string): boolean {
    return this.driving.has(taskId);
  }

  /** Drives under way in this process. */
  get drives(): number {
    return this.driving.size;
  }

  /** Puts the task in the queue now (after a worker's report), instead of at the next dispatch. */
  async nudge(t: TaskModel): Promise<void> {
    await this.lanes.enqueue([t]).catch(() => undefined);
  }

  private async driveOnce(taskId: string): Promise<void> {
    const step = await this.claims.claim(taskId);
    if (!step) return;
    // Claimed while the process was handing its claims back (shutdown): already given up.
    if (this.steps.isHandedBack(taskId)) return this.steps.forget(taskId);
    // The claim is renewed for as long as this drive goes on: a long run, but also a chain of
    // calls to a slow worker (notify, rollback, clean) that together outlast one lease.
    const type = await this.types.find(step.taskType).catch(() => undefined);
    const renewer = this.leaseKeeper.renewWhileDriving(step, type);
    try {
      let s: Step = step;
      while (!isRest(s)) {
        const from = s;
        s = await this.advance(s);
        if (this.debug) {
          // The attempt the step left the task at (a start makes the next one).
          const now = isRest(s) ? (this.steps.latestOf(taskId) ?? from) : s;
          this.logger.debug(
            TaskLog.line(
              taskId,
              Math.max(from.attempt, now.attempt),
              `${from.status} -> ${isRest(s) ? 'rest' : s.status}`,
            ),
          );
        }
      }
    } catch (err) {
      // A bug or the database failing: the claim lapses and the Checker brings the task back.
      this.logger.error(
        TaskLog.line(
          taskId,
          step.attempt,
          `driving ${taskId} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
        ),
      );
    } finally {
      await renewer.stop();
      this.steps.forget(taskId);
    }
  }

  /** One step of a drive: the part route() names for the task's status acts on it. */
  private async advance(t: TaskModel): Promise<Step> {
    const act = route(t);
    switch (act) {
      case 'start':
        // A copy: the starter may write over the row it is given.
        return this.starter.startAttempt(t.status === TaskStatus.FAIL ? { ...t } : t);
      case 'poll':
        return this.poller.poll(t);
      case 'decide-failure': {
        const type = await this.types.find(t.taskType);
        if (!type) return this.policy.noType(t);
        return this.policy.failed(t, type, t.error?.message ?? 'run failed');
      }
      case 'rollback-or-clean':
        return this.cleanup.rollbackOrClean(t);
      case 'clean-success':
        return this.cleanup.clean(t, TaskStatus.SUCCESS);
      case 'clean-rollback':
        return this.cleanup.clean(t, TaskStatus.ROLLBACK);
      case 'late-rollback':
        return this.cleanup.lateRollback(t);
      case 'release':
        return this.steps.release(t, 'nothing to do');
    }
  }
}
