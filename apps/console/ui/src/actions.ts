import { TaskStatus as Status } from '../../../../libs/task-contract/src/enums/task-status.enum';
import { canTransition } from '../../../../libs/task-contract/src/state-machine/transition-table';
import type { Task, TaskType } from './types';

/** What a person may ask of a task from the console. */
export type TaskAction = 'pause' | 'continue' | 'cancel' | 'retry' | 'rerun' | 'rollback';

export const ACTION_LABELS: Record<TaskAction, string> = {
  pause: 'Pause',
  continue: 'Continue',
  cancel: 'Cancel',
  retry: 'Retry',
  rerun: 'Re-run',
  rollback: 'Roll back',
};

/** What each action does, said in the confirmation. */
export const ACTION_EFFECTS: Record<TaskAction, string> = {
  pause: 'paused where they are',
  continue: 'continued where they were paused',
  cancel: 'cancelled (a running one is told to stop; no retry follows)',
  retry: 'run again (a failed attempt is retried; a finished failed task is re-run)',
  rerun: 'run again as a new attempt, their history kept',
  rollback: 'rolled back through their worker',
};

/**
 * Why `action` cannot be asked of `task` now, or null when it can. The status rules are the
 * transition table's (libs/task-contract, the scheduler's own); the rest are the scheduler's
 * checks that a page can see. The scheduler still decides: a refusal it sends is shown as is.
 */
export function whyNot(task: Task, action: TaskAction, type?: TaskType): string | null {
  const status = task.task_status as string as Status;
  if (task.repetition === 'topology') return 'the centre task of a topology run moves with its run';
  switch (action) {
    case 'pause':
      if (!canTransition(status, Status.PAUSE)) return `a task in ${status} cannot be paused`;
      if (task.cancel_requested) return 'a cancel is under way';
      if (status === Status.RUNNING && type && !type.implements.includes('pause'))
        return `${task.task_type} workers cannot pause a running task`;
      return null;
    case 'continue':
      return status === Status.PAUSE ? null : 'only a paused task can be continued';
    case 'cancel':
      if (task.cancel_requested) return 'a cancel was asked for already';
      if (
        status === Status.FINISH ||
        status === Status.SUCCESS ||
        status === Status.ROLLBACK ||
        (status === Status.FAIL && task.outcome)
      )
        return `a task in ${status}${task.outcome ? ` (${task.outcome})` : ''} has ended`;
      return null;
    case 'retry':
      if (status !== Status.FAIL && status !== Status.NONE)
        return 'only a failed or lost task (FAIL, NONE) can be retried; a finished one can be re-run';
      if (task.cancel_requested) return 'a cancelled task is not retried; re-run it once finished';
      return null;
    case 'rerun':
      return status === Status.FINISH ? null : 'only a finished task (FINISH) can be re-run';
    case 'rollback':
      if (!canTransition(status, Status.ROLLBACK))
        return `a task in ${status} cannot be rolled back`;
      if (status === Status.FINISH && (!task.outcome || task.outcome === 'ROLLBACK'))
        return 'this task has nothing left to undo';
      if (type && !type.implements.includes('rollback'))
        return `${task.task_type} workers cannot roll back`;
      return null;
  }
}

/** The bulk "retry": a failed attempt is retried, a finished failed or cancelled task re-run. */
export function bulkRetryCall(task: Task): 'retry' | 'rerun' | null {
  if (whyNot(task, 'retry') === null) return 'retry';
  if (whyNot(task, 'rerun') === null && (task.outcome === 'FAIL' || task.outcome === 'CANCELLED'))
    return 'rerun';
  return null;
}

/** What a cancel asked for has come to: stopping, stopped, or too late. */
export function cancelNote(t: { task_status: string; outcome?: string | null }): string {
  if (t.task_status !== 'FINISH') return 'A cancel was asked for: the task is stopping.';
  if (t.outcome === 'CANCELLED') return 'The task was cancelled.';
  return `A cancel was asked for, but the task had already ended (${t.outcome ?? 'no outcome'}).`;
}

/** What `action` will do to this very task, said in its confirmation (not the status it is in). */
export function effectOf(task: Task, action: TaskAction): string {
  const running = task.task_status === 'RUNNING';
  const next = task.attempt + 1;
  switch (action) {
    case 'pause':
      return running
        ? 'Its worker pauses the run where it is; nothing else starts until you continue it.'
        : 'It will not start or move on until you continue it.';
    case 'continue':
      return 'It goes on from where it was paused.';
    case 'cancel':
      return running
        ? 'Its worker is told to stop the run; the task then ends as CANCELLED, and no retry follows.'
        : 'It ends as CANCELLED without running again.';
    case 'retry':
      return `Attempt ${next} starts; the history of attempt ${task.attempt} is kept.`;
    case 'rerun':
      return `It runs again from the start as attempt ${next}; its history is kept.`;
    case 'rollback':
      return 'Its worker undoes what the task did; the task ends as ROLLBACK.';
  }
}
