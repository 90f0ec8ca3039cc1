import { Inject, Injectable } from '@nestjs/common';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { Metrics } from '../metrics';
import { TaskModel, TasksRepository } from '../task-store';
import { TaskTypeModel } from '../task-types';
import { REST, Step, restartBackoff } from './engine-rules';
import { TaskSteps } from './task-steps';

/** Permanent tasks between lives, and the cancel flag that ends them. */
@Injectable()
export class PermanentLives {
  constructor(
    private readonly tasks: TasksRepository,
    private readonly steps: TaskSteps,
    private readonly metrics: Metrics,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  /**
   * A permanent task waits in SUCCESS for its next life: after a life that succeeded, or after a
   * start of the next life that failed before the worker took it (the table has no SUCCESS -> FAIL).
   */
  async awaitNextLife(
    t: TaskModel,
    type: TaskTypeModel | undefined,
    ended: string,
    error?: string,
  ): Promise<Step> {
    const now = this.clock.now();
    const wait = type ? restartBackoff(t, type, now) : this.config.checker.pollIntervalMs;
    const next = await this.steps.step(t, {
      patch: {
        pendingAction: 'restart',
        dueAt: now + wait,
        owner: null,
        leaseUntil: null,
        ...(error !== undefined ? { error: { message: error } } : {}),
      },
      reason:
        error === undefined
          ? `life ${t.attempt} of a permanent task ended (${ended}); restart ${t.attempt} in ${wait} ms`
          : `restart ${t.attempt} of a permanent task failed (${error}); again in ${wait} ms`,
      note: true,
    });
    if (next && error === undefined) this.countRestart(t);
    return REST;
  }

  /** One more life of a permanent task began its wait. */
  countRestart(t: TaskModel): void {
    this.metrics.inc('baton_permanent_restarts_total', { task_type: t.taskType });
  }

  /**
   * The task with its cancel flag read again: a cancel may have been recorded beside this drive
   * (TasksRepository.requestCancel), which moves no version and so is not in the model we hold.
   */
  async withCancelFlag(t: TaskModel): Promise<TaskModel> {
    if (t.cancelRequested) return t;
    return { ...t, cancelRequested: await this.tasks.cancelRequested(t.taskId) };
  }
}
