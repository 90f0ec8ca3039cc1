import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  CANCELLED_OUTCOME,
  IllegalTransitionError,
  NotifyEvent,
  StaleFenceError,
  TaskStatus,
  WorkerCallError,
  neverReachedWorker,
  WorkerClient,
  WorkerTimeoutError,
  WorkerUnavailableError,
  canTransition,
} from '@baton/task-contract';
import { Clock, TaskLog } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskModel } from '../task-store';
import { TaskTypeModel, TimeoutPolicy } from '../task-types';
import { WorkerModel, WorkersService } from '../workers';
import { WORKER_CLIENT } from './engine.tokens';
import {
  REST,
  Step,
  backoff,
  countedAttempts,
  keptAlive,
  message,
  restartBackoff,
} from './engine-rules';
import { PermanentLives } from './permanent-lives';
import { ResourceLeases } from './resource-leases';
import { TaskCleanup } from './task-cleanup';
import { TaskSteps } from './task-steps';

/**
 * What a failure leads to: a retry with backoff while attempts remain, a permanent task's next
 * life, or the final failure (then rollback and clean); and the three timeouts under their policy.
 */
@Injectable()
export class FailurePolicy {
  private readonly logger = new Logger('TaskEngine');

  constructor(
    private readonly steps: TaskSteps,
    private readonly lives: PermanentLives,
    private readonly cleanup: TaskCleanup,
    private readonly leases: ResourceLeases,
    private readonly workers: WorkersService,
    @Inject(WORKER_CLIENT) private readonly client: WorkerClient,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  /** The task's type is not registered (any more): it cannot go on. */
  noType(t: TaskModel): Promise<Step> {
    return this.fail(t, `task type ${t.taskType} is not registered`, 'no_type');
  }

  /** A timeout under its policy: an alert only, a failure to retry, or a final failure. */
  async timeout(
    t: TaskModel,
    type: TaskTypeModel,
    policy: TimeoutPolicy,
    why: string,
    code: 'deadline_timeout' | 'heartbeat_timeout',
  ): Promise<Step> {
    if (policy === 'alert') {
      // Only tell people: an event row, and the task goes on as it was.
      await this.steps.step(t, {
        patch: {
          dueAt: this.clock.now() + this.config.checker.pollIntervalMs,
          owner: null,
          leaseUntil: null,
        },
        reason: `alert: ${why}`,
        note: true,
      });
      this.logger.warn(TaskLog.line(t.taskId, t.attempt, `task ${t.taskId}: ${why}`));
      return REST;
    }
    if (t.workerUrl) {
      await this.client
        .notify(
          t.workerUrl,
          t.taskType,
          t.taskId,
          { event: NotifyEvent.CANCEL, message: why },
          { fence: t.fence },
        )
        .catch(() => undefined);
    }
    return this.failed(t, type, why, policy === 'retry', true, code);
  }

  /**
   * An attempt failed: retry with backoff while attempts remain, else the final failure. `drop`:
   * the scheduler gives the attempt up while its worker may still hold it (it is told to drop it).
   */
  async failed(
    t0: TaskModel,
    type: TaskTypeModel,
    why: string,
    retryable = true,
    drop = false,
    code?: string,
  ): Promise<Step> {
    // Before planning another attempt or life.
    const t = retryable || keptAlive(t0) ? await this.lives.withCancelFlag(t0) : t0;
    if (t.status === TaskStatus.SUCCESS) {
      // The next life of a permanent task could not start (the worker refused it, ...).
      await this.leases.release(t.taskId);
      if (keptAlive(t)) return this.lives.awaitNextLife(t, type, 'restart failed', why);
      return this.cleanup.clean(t, TaskStatus.SUCCESS);
    }
    const maxRetry = t.maxRetry >= 0 ? t.maxRetry : type.maxRetry;
    // A permanent task is restarted whatever ended its life, until it is cancelled.
    const restart = keptAlive(t);
    const counted = countedAttempts(t);
    const retry = restart || (retryable && !t.cancelRequested && counted <= maxRetry);
    const now = this.clock.now();
    const wait = restart ? restartBackoff(t, type, now) : backoff(type, counted);
    const next = await this.steps.step(t, {
      to: TaskStatus.FAIL,
      patch: retry
        ? {
            error: code ? { message: why, code } : { message: why },
            outcome: null,
            pendingAction: null,
            dueAt: now + wait,
            owner: null,
            leaseUntil: null,
          }
        : {
            error: code ? { message: why, code } : { message: why },
            // Stopped because someone asked: the end is a cancel, not a failure.
            outcome: t.cancelRequested ? CANCELLED_OUTCOME : TaskStatus.FAIL,
            pendingAction: null,
            dueAt: now,
          },
      attemptEnd: { outcome: TaskStatus.FAIL, error: why, drop },
      reason: restart
        ? `life ${t.attempt} of a permanent task ended (${why}); restart ${t.attempt} in ${wait} ms`
        : retry
          ? `attempt ${t.attempt} failed (${why}); retry ${counted} of ${maxRetry}`
          : `failed: ${why}`,
    });
    if (next && restart) this.lives.countRestart(t);
    if (!next) return REST;
    if (retry) await this.leases.release(t.taskId);
    return retry ? REST : next;
  }

  /** A failure with no attempt behind it (bad type, refused params). */
  async fail(t: TaskModel, why: string, code: string): Promise<Step> {
    if (t.status === TaskStatus.SUCCESS) {
      await this.leases.release(t.taskId);
      if (keptAlive(t)) return this.lives.awaitNextLife(t, undefined, 'restart failed', why);
      return this.cleanup.clean(t, TaskStatus.SUCCESS);
    }
    const next = await this.steps.step(t, {
      to: TaskStatus.FAIL,
      patch: { error: { message: why, code }, outcome: TaskStatus.FAIL, dueAt: this.clock.now() },
      reason: `failed: ${why}`,
    });
    return next ?? REST;
  }

  /**
   * A call to the worker failed. A stale fence: another scheduler holds the task, stand down. A
   * call that never reached the worker (refused, no such host, not ready, rate limited) or a
   * create that timed out: the attempt moves to another worker, not counted against max_retry.
   * A create the worker refused for the state it holds the task in: asked and reconciled by the
   * caller, moved here. Anything else fails the attempt under the retry rules, and the worker is
   * told to drop it (a run that timed out may still be going there).
   */
  async callFailed(
    t: TaskModel,
    type: TaskTypeModel,
    worker: WorkerModel,
    err: unknown,
    call: string,
  ): Promise<Step> {
    if (err instanceof StaleFenceError) return REST;
    const why = `${call} on ${worker.workerId} failed: ${message(err)}`;
    if (err instanceof WorkerUnavailableError || err instanceof WorkerTimeoutError)
      await this.workers.reportFailure(worker.workerId);
    const unsent =
      neverReachedWorker(err) ||
      (call === 'create' &&
        (err instanceof WorkerTimeoutError ||
          err instanceof WorkerUnavailableError ||
          err instanceof IllegalTransitionError));
    if (unsent && !t.cancelRequested) return this.move(t, type, why);
    return this.failed(
      t,
      type,
      why,
      !(err instanceof WorkerCallError) ||
        err instanceof WorkerUnavailableError ||
        err instanceof WorkerTimeoutError,
      true,
    );
  }

  /**
   * Crash recovery: the attempt's run was lost with its worker's process (the worker says so:
   * `execution_lost`). It ended without an outcome, so the next attempt is a recovery, not a
   * retry: counted as a move (like an attempt that never reached its worker), never against
   * max_retry, and started at once (the first time) on any healthy worker, the restarted one
   * included. The worker is told to drop the lost attempt (a cancel with its fence); a worker
   * that took the new attempt meanwhile refuses that as stale. A cancel asked for meanwhile
   * ends the task instead.
   */
  async recover(t: TaskModel, type: TaskTypeModel, why: string): Promise<Step> {
    if (t.cancelRequested) return this.failed(t, type, why, false, true);
    await this.leases.release(t.taskId);
    const now = this.clock.now();
    const wait = t.moves === 0 ? 0 : backoff(type, Math.min(t.moves, 16));
    await this.steps.step(t, {
      to: TaskStatus.FAIL,
      patch: {
        moves: t.moves + 1,
        dueAt: now + wait,
        owner: null,
        leaseUntil: null,
        pendingAction: null,
        error: { message: why, code: 'execution_lost' },
        outcome: null,
      },
      attemptEnd: { outcome: TaskStatus.FAIL, error: why, drop: true },
      reason: `${why}; recovered by attempt ${t.attempt + 1} (a recovery, not counted against max_retry)`,
    });
    return REST;
  }

  /**
   * The attempt is given up without counting it: its worker is told to drop it (it may hold it
   * from an earlier create), and the task waits a moment to start its next attempt, on another
   * worker when there is one (`AttemptStarter` prefers a worker other than the last).
   */
  async move(t: TaskModel, type: TaskTypeModel, why: string): Promise<Step> {
    await this.leases.release(t.taskId);
    const now = this.clock.now();
    // The first move goes at once; a task that keeps moving (every worker refuses) backs off.
    const wait = t.moves === 0 ? 0 : backoff(type, Math.min(t.moves, 16));
    const patch = {
      moves: t.moves + 1,
      dueAt: now + wait,
      owner: null,
      leaseUntil: null,
      pendingAction: null,
    };
    const reason = `${why}; attempt ${t.attempt} moves to another worker (not counted against max_retry)`;
    // POSTPONE where the table allows it (CREATE, PREPARE); a run already written as RUNNING
    // (create and run in one call) goes the way of a retry, through FAIL with no outcome.
    await this.steps.step(
      t,
      canTransition(t.status, TaskStatus.POSTPONE)
        ? {
            to: TaskStatus.POSTPONE,
            patch,
            attemptEnd: { outcome: TaskStatus.POSTPONE, error: why, drop: true },
            reason,
          }
        : {
            to: TaskStatus.FAIL,
            patch: { ...patch, error: { message: why }, outcome: null },
            attemptEnd: { outcome: TaskStatus.FAIL, error: why, drop: true },
            reason,
          },
    );
    return REST;
  }
}
