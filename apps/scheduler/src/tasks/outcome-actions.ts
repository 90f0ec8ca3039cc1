import { Injectable } from '@nestjs/common';
import {
  ContractCall,
  ContractErrorCode,
  ContractException,
  TaskStatus,
  canTransition,
} from '@baton/task-contract';
import { Clock } from '../common';
import { TaskModel } from '../task-store';
import { TaskTypesService } from '../task-types';
import { ActionSteps } from './action-steps';
import { FastEnqueue } from './fast-enqueue';
import { illegal } from './run-control';
import { TaskFactory } from './task-factory';

const ACTOR = 'api';

/** What a person may do about a task's outcome: retry a failure, roll back, re-run a finished task. */
@Injectable()
export class OutcomeActions {
  constructor(
    private readonly steps: ActionSteps,
    private readonly types: TaskTypesService,
    private readonly factory: TaskFactory,
    private readonly fast: FastEnqueue,
    private readonly clock: Clock,
  ) {}

  async retry(taskId: string, actor = ACTOR): Promise<TaskModel> {
    const t = await this.steps.free(taskId);
    if (t.status !== TaskStatus.FAIL && t.status !== TaskStatus.NONE) throw illegal('retry', t);
    if (t.cancelRequested) throw illegal('retry a cancelled task; create a new one to', t);
    const next = await this.steps.change(
      t,
      {
        patch: { outcome: null, dueAt: this.clock.now() },
        reason: 'retry requested',
      },
      actor,
    );
    await this.fast.enqueue([next]);
    return next;
  }

  /**
   * Undo what the task did, through its worker's rollback: a task whose outcome awaits (SUCCESS,
   * FAIL), or one that finished and was not undone yet: SUCCESS, FAIL or CANCELLED (it is rolled
   * back, then FINISHes again).
   */
  async rollback(taskId: string, actor = ACTOR): Promise<TaskModel> {
    const t = await this.steps.free(taskId);
    if (!canTransition(t.status, TaskStatus.ROLLBACK)) throw illegal('roll back', t);
    if (
      t.status === TaskStatus.FINISH &&
      (t.pendingAction !== null || t.outcome === null || t.outcome === TaskStatus.ROLLBACK)
    )
      throw illegal('roll back', t);
    const type = await this.types.get(t.taskType);
    if (!type.implements.includes(ContractCall.ROLLBACK)) {
      throw new ContractException(
        ContractErrorCode.NOT_IMPLEMENTED,
        `${t.taskType} workers cannot roll back`,
      );
    }
    const next = await this.steps.change(
      t,
      {
        patch: { pendingAction: 'rollback', dueAt: this.clock.now() },
        reason: 'rollback requested',
      },
      actor,
    );
    await this.fast.enqueue([next]);
    return next;
  }

  /**
   * A new attempt of a finished task: same id, attempt + 1 with a new fence, its history kept, its
   * params changed if given. It starts as any start does (start checks, limits, lock keys, a
   * worker) with a fresh retry budget: the attempts before it do not count against max_retry.
   * With `fromAttempt`, only a task finished at that attempt is re-run (a caller that may ask
   * twice for one re-run).
   */
  async rerun(
    taskId: string,
    params: Record<string, unknown> | undefined,
    actor = ACTOR,
    fromAttempt?: number,
    /**
     * False for a run's retry of a node, whose params the run rendered: a refusal there would
     * leave the run asking again forever, so the worker's own create checks them (and a refusal
     * fails the node).
     */
    checkSchema = true,
  ): Promise<TaskModel> {
    if (params) this.factory.checkParamsSize(params);
    const t = await this.steps.free(taskId);
    if (t.status !== TaskStatus.FINISH || t.pendingAction !== null) throw illegal('re-run', t);
    if (fromAttempt !== undefined && t.attempt !== fromAttempt)
      throw new ContractException(
        ContractErrorCode.ILLEGAL_TRANSITION,
        `task ${t.taskId} is at attempt ${t.attempt}: its re-run from attempt ${fromAttempt} was made already`,
        { task_id: t.taskId, attempt: t.attempt },
      );
    if (params && checkSchema) this.types.checkParams(await this.types.get(t.taskType), params);
    const next = await this.steps.change(
      t,
      {
        patch: {
          pendingAction: 'rerun',
          dueAt: this.clock.now(),
          // The outcome stands until the new attempt starts (it is what the task last came to,
          // and what the counts of finished tasks file it under).
          cancelRequested: false,
          moves: t.attempt,
          ...(params ? { params } : {}),
        },
        reason: params ? 're-run requested, with new params' : 're-run requested',
      },
      actor,
    );
    await this.fast.enqueue([next]);
    return next;
  }
}
