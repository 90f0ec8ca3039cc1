import { TaskStatus } from '@baton/task-contract';
import { PATCH_COLUMNS, toColumn } from './task-row.mapping';
import { TaskAttemptModel, TaskModel, TaskPatch } from './task.model';

/** One change of a task: a new status (or none), fields, and the words for the log. */
export interface TaskChange {
  to?: TaskStatus;
  /**
   * Statuses passed through on the way to `to`, in order, each logged as its own event (one
   * write for e.g. RUNNING -> SUCCESS when a sync run answers at once).
   */
  via?: TaskStatus[];
  patch?: TaskPatch;
  reason: string;
  actor: string;
  /** Take a new fence (a new claim): fence + 1. */
  bumpFence?: boolean;
  /** Open the row of an attempt in the same transaction (idempotent for a re-drive). */
  attemptStart?: Pick<
    TaskAttemptModel,
    'attempt' | 'workerId' | 'workerUrl' | 'fence' | 'startedAt'
  >;
  /**
   * The outcome and error to record when this change ends the current attempt. Whether it ends
   * one is not the caller's call: it does when the task leaves CREATE/PREPARE/RUNNING/PAUSE.
   */
  attemptEnd?: {
    outcome: TaskStatus;
    error: string | null;
    /**
     * The scheduler gave the attempt up while its worker may still hold it (a call that failed or
     * timed out, a move to another worker): the worker is to be told to drop it (`AttemptDrops`).
     */
    drop?: boolean;
  };
  /**
   * Log an event even when the status does not move (from = to): a request from a person or a
   * worker's report that changes what happens next (cancel requested, an alert, a wait).
   */
  note?: boolean;
  /**
   * A note that repeats the wait told with these words (`TaskWait.why`): when that is the task's
   * latest row, it is updated in place (one more repeat, its last time), not a row of its own.
   */
  repeatOf?: string;
}

/** Statuses in which an attempt is under way (its row is open). */
export const OPEN_ATTEMPT: ReadonlySet<TaskStatus> = new Set([
  TaskStatus.CREATE,
  TaskStatus.PREPARE,
  TaskStatus.RUNNING,
  TaskStatus.PAUSE,
]);

/** Statuses of an attempt under way that a PAUSE may come from (and hold its lock keys in). */
export const MID_ATTEMPT: ReadonlySet<TaskStatus> = new Set([
  TaskStatus.CREATE,
  TaskStatus.PREPARE,
  TaskStatus.RUNNING,
]);

/**
 * Statuses in which a task holds its lock keys (FAIL too, once its outcome is final; PAUSE only
 * when paused in the middle of an attempt: `TasksRepository.lockKeyHolder`).
 */
export const HOLDING_STATUSES: ReadonlySet<TaskStatus> = new Set([
  ...OPEN_ATTEMPT,
  TaskStatus.SUCCESS,
  TaskStatus.ROLLBACK,
  TaskStatus.NONE,
]);

/** [from, ...via, to] without repeats of the current status; [from] when nothing moves. */
export function statusPath(from: TaskStatus, change: TaskChange): TaskStatus[] {
  const path = [from];
  for (const s of [...(change.via ?? []), ...(change.to !== undefined ? [change.to] : [])]) {
    if (s !== path[path.length - 1]) path.push(s);
  }
  return path;
}

/** The columns a change sets on its task's row (version aside), and the task after it. */
export interface CasRow {
  set: [string, unknown][];
  next: TaskModel;
}

/** Bytes of text (JSON) the rows would send. */
export const setBytes = (rows: readonly CasRow[]): number =>
  rows.reduce(
    (n, r) => n + r.set.reduce((k, [, v]) => k + (typeof v === 'string' ? v.length : 0), 0),
    0,
  );

export function casRow(task: TaskModel, change: TaskChange, now: number): CasRow {
  const set: [string, unknown][] = [['updated_at', now]];
  const next: TaskModel = { ...task, ...change.patch, version: task.version + 1, updatedAt: now };
  for (const [field, value] of Object.entries(change.patch ?? {}) as [keyof TaskPatch, unknown][])
    set.push([PATCH_COLUMNS[field], toColumn(PATCH_COLUMNS[field], value)]);
  const path = statusPath(task.status, change);
  if (path.length > 1) {
    set.push(['status', path[path.length - 1]]);
    next.status = path[path.length - 1];
    // A move ends a wait unless it is one (a wait told as a move sets `waiting` itself).
    if (task.waiting !== null && !(change.patch && 'waiting' in change.patch)) {
      set.push(['waiting', null]);
      next.waiting = null;
    }
  }
  if (change.bumpFence) {
    set.push(['fence', task.fence + 1]);
    next.fence = task.fence + 1;
  }
  return { set, next };
}
