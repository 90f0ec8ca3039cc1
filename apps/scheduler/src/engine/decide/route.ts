import { TaskStatus } from '@baton/task-contract';
import { TaskModel } from '../../task-store';

/** What the engine does with a task it claimed, by its status (one row of the state table each). */
export type Route =
  /** Check the gates and start (or re-drive) an attempt on a worker. */
  | 'start'
  /** Ask the worker how the running attempt is. */
  | 'poll'
  /** A run failed: retry, restart or give up (decideFailure). */
  | 'decide-failure'
  /** The final failure, or a rollback asked for: roll back if wanted and possible, else clean. */
  | 'rollback-or-clean'
  /** A success: clean on the worker and here, then FINISH (a permanent task waits for its next life). */
  | 'clean-success'
  /** A rollback is done: clean, then FINISH with outcome ROLLBACK. */
  | 'clean-rollback'
  /** A person asked to undo a finished task. */
  | 'late-rollback'
  /** Nothing to do until someone acts: give up the claim. */
  | 'release';

export function route(t: TaskModel): Route {
  switch (t.status) {
    case TaskStatus.INIT:
    case TaskStatus.POSTPONE:
    case TaskStatus.NONE:
    case TaskStatus.CREATE:
    case TaskStatus.PREPARE:
      return 'start';
    case TaskStatus.RUNNING:
      return 'poll';
    case TaskStatus.SUCCESS:
      // A permanent task's next life, once its backoff is over.
      return t.pendingAction === 'restart' && !t.cancelRequested ? 'start' : 'clean-success';
    case TaskStatus.ROLLBACK:
      return 'clean-rollback';
    case TaskStatus.FAIL:
      if (t.pendingAction === 'decide') return 'decide-failure';
      // A retry whose backoff is over (no outcome yet), else the end of a final failure.
      if (t.outcome === null && !t.cancelRequested && t.pendingAction !== 'rollback')
        return 'start';
      return 'rollback-or-clean';
    case TaskStatus.FINISH:
      // A person asked for a new attempt, or to undo what the task did.
      if (t.pendingAction === 'rerun') return 'start';
      if (t.pendingAction === 'rollback') return 'late-rollback';
      return 'release';
    case TaskStatus.PAUSE:
      return 'release';
  }
}
