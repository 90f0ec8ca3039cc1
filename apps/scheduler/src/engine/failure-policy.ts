import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  NotifyEvent,
  StaleFenceError,
  TaskStatus,
  WorkerCallError,
  WorkerClient,
  WorkerTimeoutError,
  WorkerUnavailableError,
} from '@baton/task-contract';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskModel } from '../task-store';
import { TaskTypeModel, TimeoutPolicy } from '../task-types';
import { WorkerModel, WorkersService } from '../workers';
import { WORKER_CLIENT } from './engine.tokens';
import { REST, Step, backoff, keptAlive, message, restartBackoff } from './engine-rules';
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
      this.logger.warn(`task ${t.taskId}: ${why}`);
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
    return this.failed(t, type, why, policy === 'retry');
  }

  /** An attempt failed: retry with backoff while attempts remain, else the final failure. */
  async failed(t0: TaskModel, type: TaskTypeModel, why: string, retryable = true): Promise<Step> {
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
    const retry = restart || (retryable && !t.cancelRequested && t.attempt <= maxRetry);
    const now = this.clock.now();
    const wait = restart ? restartBackoff(t, type, now) : backoff(type, t.attempt);
    const next = await this.steps.step(t, {
      to: TaskStatus.FAIL,
      patch: retry
        ? {
            error: { message: why },
            outcome: null,
            pendingAction: null,
            dueAt: now + wait,
            owner: null,
            leaseUntil: null,
          }
        : { error: { message: why }, outcome: TaskStatus.FAIL, pendingAction: null, dueAt: now },
      attemptEnd: { outcome: TaskStatus.FAIL, error: why },
      reason: restart
        ? `life ${t.attempt} of a permanent task ended (${why}); restart ${t.attempt} in ${wait} ms`
        : retry
          ? `attempt ${t.attempt} failed (${why}); retry ${t.attempt} of ${maxRetry}`
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

  /** A call to the worker failed: stand down, wait for another worker, or fail the attempt. */
  async callFailed(
    t: TaskModel,
    type: TaskTypeModel,
    worker: WorkerModel,
    err: unknown,
    call: string,
    attemptStarted: boolean,
  ): Promise<Step> {
    if (err instanceof StaleFenceError) {
      // Another scheduler holds a newer claim and already spoke to the worker: stand down.
      return REST;
    }
    if (err instanceof WorkerUnavailableError || err instanceof WorkerTimeoutError) {
      await this.workers.reportFailure(worker.workerId);
      if (!attemptStarted) {
        await this.leases.release(t.taskId);
        return this.steps.postpone(
          t,
          this.clock.now() + backoff(type, 1),
          `${call} on ${worker.workerId} failed: ${message(err)}`,
        );
      }
    }
    return this.failed(
      t,
      type,
      `${call} on ${worker.workerId} failed: ${message(err)}`,
      !(err instanceof WorkerCallError) ||
        err instanceof WorkerUnavailableError ||
        err instanceof WorkerTimeoutError,
    );
  }
}
