import { Inject, Injectable } from '@nestjs/common';
import { ContractCall, TaskStatus, TaskViewDto } from '@baton/task-contract';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskModel } from '../task-store';
import { TaskTypeModel } from '../task-types';
import { REST, Step, keptAlive } from './engine-rules';
import { FailurePolicy } from './failure-policy';
import { PermanentLives } from './permanent-lives';
import { ResourceLeases } from './resource-leases';
import { TaskSteps } from './task-steps';

/** What the worker says a task is, taken over as the task's next step (after a run or a poll). */
@Injectable()
export class WorkerStateAdoption {
  constructor(
    private readonly steps: TaskSteps,
    private readonly policy: FailurePolicy,
    private readonly lives: PermanentLives,
    private readonly leases: ResourceLeases,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  /** Continues from what the worker says the task is. */
  async adoptWorkerState(t0: TaskModel, type: TaskTypeModel, view: TaskViewDto): Promise<Step> {
    let t = t0;
    switch (view.task_status) {
      case TaskStatus.SUCCESS:
      case TaskStatus.ROLLBACK:
      case TaskStatus.FINISH: {
        // A permanent task lives on unless a cancel was recorded beside this drive meanwhile.
        if (keptAlive(t)) t = await this.lives.withCancelFlag(t);
        // Nothing to clean on the worker and no rollback asked: SUCCESS and FINISH in one write.
        // A permanent task lives on instead (its restart is decided under SUCCESS, in clean).
        const done =
          !type.implements.includes(ContractCall.CLEAN) &&
          t.pendingAction === null &&
          !keptAlive(t);
        if (done) await this.leases.release(t.taskId);
        const now = this.clock.now();
        const next = await this.steps.step(t, {
          via: [TaskStatus.RUNNING, TaskStatus.SUCCESS],
          to: done ? TaskStatus.FINISH : TaskStatus.SUCCESS,
          patch: {
            result: view.result,
            error: null,
            progress: view.progress
              ? {
                  percent: view.progress.percent,
                  step: view.progress.step,
                  message: view.progress.message,
                }
              : null,
            ...(done
              ? {
                  outcome: TaskStatus.SUCCESS,
                  finishedAt: now,
                  dueAt: null,
                  owner: null,
                  leaseUntil: null,
                }
              : {}),
          },
          attemptEnd: { outcome: TaskStatus.SUCCESS, error: null },
          reason: done ? 'run succeeded; nothing to clean' : 'run succeeded',
        });
        return next && !done ? next : REST;
      }
      case TaskStatus.FAIL:
        return this.policy.failed(t, type, view.error?.message ?? 'run failed');
      case TaskStatus.RUNNING:
      case TaskStatus.PAUSE: {
        const now = this.clock.now();
        await this.steps.step(t, {
          to: TaskStatus.RUNNING,
          patch: {
            dueAt: now + this.config.checker.pollIntervalMs,
            owner: null,
            leaseUntil: null,
            heartbeatAt: now,
          },
          reason: 'running on the worker',
        });
        return REST;
      }
      default:
        return this.policy.failed(
          t,
          type,
          `worker answered ${view.task_status} where an outcome was expected`,
        );
    }
  }

  /**
   * NONE: the worker forgot the task (restart without a store): create it again. Like a lost
   * execution, that is a recovery, not a retry: counted as a move, never against max_retry.
   */
  async workerLostTask(t: TaskModel, why: string): Promise<Step> {
    const next = await this.steps.step(t, {
      to: TaskStatus.NONE,
      patch: { dueAt: this.clock.now(), moves: t.moves + 1 },
      reason: `${why}; recovered by attempt ${t.attempt + 1} (a recovery, not counted against max_retry)`,
    });
    return next ?? REST;
  }
}
