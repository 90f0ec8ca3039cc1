import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  ContractCall,
  IllegalTransitionError,
  NotImplementedError,
  StaleFenceError,
  TaskNotFoundError,
  TaskOutcome,
  TaskStatus,
  WorkerCallError,
  WorkerClient,
  WorkerUnavailableError,
} from '@baton/task-contract';
import { Clock, TaskLog } from '../common';
import { TaskModel } from '../task-store';
import { TaskTypesService } from '../task-types';
import { WORKER_CLIENT } from './engine.tokens';
import { REST, Step, keptAlive, message } from './engine-rules';
import { finishChange, wantsRollback } from './decide';
import { PermanentLives } from './permanent-lives';
import { ResourceLeases } from './resource-leases';
import { TaskSteps } from './task-steps';

/** The end of a task: rollback when asked for, clean on the worker and here, then FINISH. */
@Injectable()
export class TaskCleanup {
  private readonly logger = new Logger('TaskEngine');

  constructor(
    private readonly types: TaskTypesService,
    @Inject(WORKER_CLIENT) private readonly client: WorkerClient,
    private readonly leases: ResourceLeases,
    private readonly steps: TaskSteps,
    private readonly lives: PermanentLives,
    private readonly clock: Clock,
  ) {}

  /** A final failure (or a rollback asked for): roll back if the type can and wants it, else clean. */
  async rollbackOrClean(t: TaskModel): Promise<Step> {
    const type = await this.types.find(t.taskType);
    if (wantsRollback(t, type) && type?.implements.includes(ContractCall.ROLLBACK) && t.workerUrl) {
      try {
        await this.client.rollback(t.workerUrl, t.taskType, t.taskId, {
          fence: t.fence,
          traceparent: TaskLog.traceparent(t.taskId, t.attempt),
        });
      } catch (err) {
        if (!(err instanceof NotImplementedError))
          return this.steps.retryLater(t, `rollback failed: ${message(err)}`);
      }
      const next = await this.steps.step(t, {
        to: TaskStatus.ROLLBACK,
        patch: { outcome: TaskStatus.ROLLBACK, pendingAction: null },
        reason: 'rolled back',
      });
      return next ?? REST;
    }
    return this.clean(t, TaskStatus.FAIL);
  }

  /**
   * A rollback asked for after the task finished: the worker undoes it (from FINISH), then it is
   * cleaned and FINISHes again with outcome ROLLBACK. A worker that no longer knows the task
   * cannot undo it: that is recorded, and the task stays as it was.
   */
  async lateRollback(t: TaskModel): Promise<Step> {
    if (!t.workerUrl) return this.rollbackImpossible(t, 'no worker ever ran it');
    try {
      await this.client.rollback(t.workerUrl, t.taskType, t.taskId, {
        fence: t.fence,
        traceparent: TaskLog.traceparent(t.taskId, t.attempt),
      });
    } catch (err) {
      if (err instanceof TaskNotFoundError || err instanceof NotImplementedError)
        return this.rollbackImpossible(t, message(err));
      if (err instanceof StaleFenceError) return REST;
      return this.steps.retryLater(t, `rollback failed: ${message(err)}`);
    }
    const next = await this.steps.step(t, {
      to: TaskStatus.ROLLBACK,
      patch: { outcome: TaskStatus.ROLLBACK, pendingAction: null },
      reason: 'rolled back after it finished',
    });
    return next ?? REST;
  }

  private async rollbackImpossible(t: TaskModel, why: string): Promise<Step> {
    await this.steps.step(t, {
      patch: { pendingAction: null, dueAt: null, owner: null, leaseUntil: null },
      note: true,
      reason: `rollback impossible: ${why}`,
    });
    return REST;
  }

  /** After an outcome: release resources on the worker and here, then FINISH. */
  async clean(t: TaskModel, outcome: TaskOutcome): Promise<Step> {
    if (t.pendingAction === 'rollback' && outcome === TaskStatus.SUCCESS)
      return this.rollbackOrClean(t);
    const type = await this.types.find(t.taskType);
    // A permanent task between lives is not cleaned on the worker (a retry is not either): the
    // worker takes its next attempt from SUCCESS; the clean comes when the task really ends.
    if (outcome === TaskStatus.SUCCESS && keptAlive(t)) {
      await this.leases.release(t.taskId);
      return this.lives.awaitNextLife(t, type, 'success');
    }
    if (type?.implements.includes(ContractCall.CLEAN) && t.workerUrl) {
      try {
        await this.client.clean(t.workerUrl, t.taskType, t.taskId, {
          fence: t.fence,
          traceparent: TaskLog.traceparent(t.taskId, t.attempt),
        });
      } catch (err) {
        if (err instanceof StaleFenceError) return REST;
        // A worker of contract 1.0/1.1 refuses a repeated clean (our FINISH write was lost in a
        // crash after its clean): the task is clean there, which is what was asked.
        if (alreadyClean(err)) return this.finish(t, outcome);
        // The worker forgot the task or cannot be reached: nothing of ours to release there.
        if (!(
          err instanceof TaskNotFoundError ||
          err instanceof WorkerUnavailableError ||
          err instanceof WorkerCallError
        ))
          throw err;
        this.logger.warn(
          TaskLog.line(t.taskId, t.attempt, `clean of ${t.taskId} failed: ${message(err)}`),
        );
      }
    }
    return this.finish(t, outcome);
  }

  private async finish(t: TaskModel, outcome: TaskOutcome): Promise<Step> {
    await this.leases.release(t.taskId);
    await this.steps.step(t, finishChange(t, outcome, this.clock.now()));
    return REST;
  }
}

/** The worker refused a clean because it holds the task in FINISH already. */
function alreadyClean(err: unknown): boolean {
  return (
    err instanceof IllegalTransitionError &&
    (err.data as { from?: unknown } | null)?.from === TaskStatus.FINISH
  );
}
