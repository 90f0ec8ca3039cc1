import { TaskStatus } from '../enums/task-status.enum';
import { ContractException, ContractErrorCode } from '../errors/contract.exception';

/**
 * Every allowed move between statuses (docs/architecture.md). One table for scheduler, worker and
 * console; `satisfies` makes the compiler refuse a status that is missing from it.
 *
 * Reading it: retries go back to CREATE (from FAIL, RUNNING on a lost run, NONE when the worker
 * forgot the task); POSTPONE and PAUSE can be entered from any non-final pre-outcome status and
 * left back into the flow; SUCCESS and FAIL are outcomes that clean (FINISH) or roll back;
 * FINISH is where a task rests: only a person moves it on, with a re-run (a new attempt, back to
 * CREATE) or a late rollback (ROLLBACK, then FINISH again). A permanent task
 * (repetition=permanent) is kept alive: when a life ends in SUCCESS its next attempt starts in
 * CREATE, as a failed one does from FAIL.
 */
export const TRANSITIONS = {
  [TaskStatus.INIT]: [TaskStatus.CREATE, TaskStatus.POSTPONE, TaskStatus.PAUSE, TaskStatus.FAIL],
  [TaskStatus.CREATE]: [
    TaskStatus.PREPARE,
    TaskStatus.RUNNING,
    TaskStatus.POSTPONE,
    TaskStatus.PAUSE,
    TaskStatus.FAIL,
    TaskStatus.NONE,
  ],
  [TaskStatus.PREPARE]: [
    TaskStatus.RUNNING,
    TaskStatus.POSTPONE,
    TaskStatus.PAUSE,
    TaskStatus.FAIL,
    TaskStatus.NONE,
  ],
  [TaskStatus.POSTPONE]: [
    TaskStatus.CREATE,
    TaskStatus.PREPARE,
    TaskStatus.PAUSE,
    TaskStatus.FAIL,
    TaskStatus.NONE,
  ],
  [TaskStatus.RUNNING]: [
    TaskStatus.SUCCESS,
    TaskStatus.FAIL,
    TaskStatus.PAUSE,
    TaskStatus.CREATE,
    TaskStatus.NONE,
  ],
  [TaskStatus.PAUSE]: [
    TaskStatus.INIT,
    TaskStatus.CREATE,
    TaskStatus.PREPARE,
    TaskStatus.POSTPONE,
    TaskStatus.RUNNING,
    TaskStatus.FAIL,
    TaskStatus.NONE,
  ],
  [TaskStatus.SUCCESS]: [TaskStatus.FINISH, TaskStatus.ROLLBACK, TaskStatus.CREATE],
  [TaskStatus.FAIL]: [TaskStatus.CREATE, TaskStatus.ROLLBACK, TaskStatus.FINISH],
  [TaskStatus.ROLLBACK]: [TaskStatus.FINISH],
  [TaskStatus.FINISH]: [TaskStatus.CREATE, TaskStatus.ROLLBACK],
  [TaskStatus.NONE]: [TaskStatus.CREATE, TaskStatus.FAIL, TaskStatus.FINISH],
} as const satisfies Record<TaskStatus, readonly TaskStatus[]>;

/** True when the table allows moving from `from` to `to`. */
export function canTransition(from: TaskStatus, to: TaskStatus): boolean {
  return (TRANSITIONS[from] as readonly TaskStatus[]).includes(to);
}

/**
 * Refuses a move the table does not allow with an ILLEGAL_TRANSITION contract error, which
 * every app maps to 409.
 */
export function assertTransition(from: TaskStatus, to: TaskStatus): void {
  if (!canTransition(from, to)) {
    throw new ContractException(
      ContractErrorCode.ILLEGAL_TRANSITION,
      `transition ${from} -> ${to} is not allowed`,
      { from, to, allowed: [...TRANSITIONS[from]] },
    );
  }
}

/** Statuses reachable from `from` in one move. */
export function nextStatuses(from: TaskStatus): readonly TaskStatus[] {
  return TRANSITIONS[from];
}
