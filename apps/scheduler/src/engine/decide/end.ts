import { CANCELLED_OUTCOME, RepetitionKind, TaskOutcome, TaskStatus } from '@baton/task-contract';
import { TaskModel } from '../../task-store';
import { TaskTypeModel } from '../../task-types';

import { Change } from './types';

/** A final failure or an asked-for rollback: whether to call the worker's rollback first. */
export function wantsRollback(t: TaskModel, type: TaskTypeModel | undefined): boolean {
  return t.pendingAction === 'rollback' || (type?.rollbackOnFail ?? false);
}

/**
 * The outcome a task FINISHes with: the one written already, else the step's; a permanent task
 * never ends by itself, so when it ends someone stopped it (CANCELLED).
 */
export function finalOutcome(t: TaskModel, outcome: TaskOutcome): TaskOutcome {
  return (
    t.outcome ??
    (t.repetition === RepetitionKind.PERMANENT && t.cancelRequested ? CANCELLED_OUTCOME : outcome)
  );
}

/** The write that ends a task: FINISH with its outcome, nothing due. */
export function finishChange(t: TaskModel, outcome: TaskOutcome, now: number): Change {
  const final = finalOutcome(t, outcome);
  return {
    to: TaskStatus.FINISH,
    patch: { outcome: final, finishedAt: now, dueAt: null, owner: null, leaseUntil: null },
    reason: `cleaned up (${final})`,
  };
}
