import { Inject, Injectable, Logger } from '@nestjs/common';
import { NotifyEvent, TaskStatus, WorkerClient } from '@baton/task-contract';
import { Clock, TaskLog } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskModel } from '../task-store';
import { TaskTypeModel } from '../task-types';
import { WorkerModel, WorkersService } from '../workers';
import { WORKER_CLIENT } from './engine.tokens';
import { REST, Step, keptAlive, message } from './engine-rules';
import {
  Failure,
  decideCallFailure,
  decideFailure,
  decideRecovery,
  TimeoutPlan,
  alertChange,
  decideUnstartable,
  moveChange,
} from './decide';
import { PermanentLives } from './permanent-lives';
import { ResourceLeases } from './resource-leases';
import { TaskCleanup } from './task-cleanup';
import { TaskSteps } from './task-steps';

/**
 * Carries out what a failure leads to (decide.ts decides): a retry with backoff while attempts
 * remain, a permanent task's next life, or the final failure (then rollback and clean); and the
 * three timeouts under their policy.
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

  /** A timeout under its policy (decideTimeout): an alert only, a failure to retry, or a final failure. */
  async timeout(t: TaskModel, type: TaskTypeModel, plan: TimeoutPlan): Promise<Step> {
    if (plan.kind === 'alert') {
      // Only tell people: an event row, and the task goes on as it was, looked at again a poll
      // interval from now (the calls of the poll that found it late took time).
      await this.steps.step(
        t,
        alertChange(plan.why, this.clock.now(), this.config.checker.pollIntervalMs),
      );
      this.logger.warn(TaskLog.line(t.taskId, t.attempt, `task ${t.taskId}: ${plan.why}`));
      return REST;
    }
    const why = plan.failure.why;
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
    return this.failedWith(t, type, plan.failure);
  }

  /**
   * An attempt failed: retry with backoff while attempts remain, else the final failure. `drop`:
   * the scheduler gives the attempt up while its worker may still hold it (it is told to drop it).
   */
  failed(
    t: TaskModel,
    type: TaskTypeModel,
    why: string,
    retryable = true,
    drop = false,
    code?: string,
  ): Promise<Step> {
    return this.failedWith(t, type, { why, retryable, drop, code });
  }

  private async failedWith(t0: TaskModel, type: TaskTypeModel, f: Failure): Promise<Step> {
    // Before planning another attempt or life: a cancel may have been recorded beside this drive.
    const t = f.retryable || keptAlive(t0) ? await this.lives.withCancelFlag(t0) : t0;
    const plan = decideFailure(t, type, f, this.clock.now());
    switch (plan.kind) {
      case 'next-life':
        // The next life of a permanent task could not start (the worker refused it, ...).
        await this.leases.release(t.taskId);
        return this.lives.awaitNextLife(t, type, 'restart failed', f.why);
      case 'clean-success':
        await this.leases.release(t.taskId);
        return this.cleanup.clean(t, TaskStatus.SUCCESS);
      case 'final':
        return (await this.steps.step(t, plan.change)) ?? REST;
      case 'retry':
      case 'restart': {
        const next = await this.steps.step(t, plan.change);
        if (!next) return REST;
        if (plan.kind === 'restart') this.lives.countRestart(t);
        await this.leases.release(t.taskId);
        return REST;
      }
    }
  }

  /** A failure with no attempt behind it (bad type, refused params). */
  async fail(t: TaskModel, why: string, code: string): Promise<Step> {
    const plan = decideUnstartable(t, why, code, this.clock.now());
    if (plan.kind === 'final') return (await this.steps.step(t, plan.change)) ?? REST;
    await this.leases.release(t.taskId);
    if (plan.kind === 'next-life')
      return this.lives.awaitNextLife(t, undefined, 'restart failed', why);
    return this.cleanup.clean(t, TaskStatus.SUCCESS);
  }

  /**
   * A call to the worker failed (decideCallFailure): stand down on a stale fence, move the attempt
   * to another worker when the call never reached this one, else fail it under the retry rules.
   */
  async callFailed(
    t: TaskModel,
    type: TaskTypeModel,
    worker: WorkerModel,
    err: unknown,
    call: string,
  ): Promise<Step> {
    const plan = decideCallFailure(
      t,
      err,
      call,
      `${call} on ${worker.workerId} failed: ${message(err)}`,
      this.clock.now(),
    );
    if (plan.kind === 'stand-down') return REST;
    if (plan.workerFault) await this.workers.reportFailure(worker.workerId);
    if (plan.kind === 'move') return this.move(t, type, plan.why);
    if (plan.kind === 'unknown') {
      await this.steps.step(t, plan.change);
      return REST;
    }
    return this.failedWith(t, type, plan.failure);
  }

  /**
   * Crash recovery: the attempt's run was lost with its worker's process (the worker says so:
   * `execution_lost`). The next attempt is a recovery (decideRecovery). The worker is told to
   * drop the lost attempt; a worker that took the new attempt meanwhile refuses that as stale.
   */
  async recover(t: TaskModel, type: TaskTypeModel, why: string): Promise<Step> {
    const plan = decideRecovery(t, type, why, this.clock.now());
    if (plan.kind === 'cancelled') return this.failedWith(t, type, plan.failure);
    await this.leases.release(t.taskId);
    await this.steps.step(t, plan.change);
    return REST;
  }

  /**
   * The attempt is given up without counting it: its worker is told to drop it (it may hold it
   * from an earlier create), and the task waits a moment to start its next attempt, on another
   * worker when there is one (`AttemptStarter` prefers a worker other than the last).
   */
  async move(t: TaskModel, type: TaskTypeModel, why: string): Promise<Step> {
    await this.leases.release(t.taskId);
    await this.steps.step(t, moveChange(t, type, why, this.clock.now()));
    return REST;
  }
}
