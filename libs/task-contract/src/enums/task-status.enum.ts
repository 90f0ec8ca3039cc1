/**
 * The life of a task (docs/architecture.md). The string values are what travels on the wire.
 */
export enum TaskStatus {
  /** Recorded by the scheduler; no worker has seen it yet. */
  INIT = 'INIT',
  /** The worker accepted the task. */
  CREATE = 'CREATE',
  /** Preconditions checked and resources reserved. */
  PREPARE = 'PREPARE',
  /** Waiting: start time, lock or resource conflict, rate limit, no capacity. */
  POSTPONE = 'POSTPONE',
  RUNNING = 'RUNNING',
  PAUSE = 'PAUSE',
  SUCCESS = 'SUCCESS',
  FAIL = 'FAIL',
  /** What run did has been undone. */
  ROLLBACK = 'ROLLBACK',
  /** Cleaned up; final. */
  FINISH = 'FINISH',
  /** The worker does not know the task (lost). */
  NONE = 'NONE',
}

export const TASK_STATUSES: readonly TaskStatus[] = Object.values(TaskStatus);

/**
 * Spellings accepted on input besides the canonical ones. The original design wrote `Postpose`;
 * clients built against it keep working. Keys are lower-case.
 */
const STATUS_ALIASES: Readonly<Record<string, TaskStatus>> = {
  postpose: TaskStatus.POSTPONE,
};

/**
 * Reads a status from input: canonical names in any case, plus the `Postpose` alias.
 * Returns `undefined` for anything else, so callers decide how to refuse it.
 */
export function parseTaskStatus(value: unknown): TaskStatus | undefined {
  if (typeof value !== 'string') return undefined;
  const upper = value.trim().toUpperCase();
  if ((TASK_STATUSES as readonly string[]).includes(upper)) return upper as TaskStatus;
  return STATUS_ALIASES[value.trim().toLowerCase()];
}

/**
 * Reads a status from a request body: exactly a canonical name, or exactly the `Postpose` alias.
 * `init` or `INIT ` are refused there (a body is written by a program, and a near miss is a bug
 * to report, not to guess at); query strings keep `parseTaskStatus`.
 */
export function exactTaskStatus(value: unknown): TaskStatus | undefined {
  if (typeof value !== 'string') return undefined;
  if ((TASK_STATUSES as readonly string[]).includes(value)) return value as TaskStatus;
  return value === 'Postpose' ? TaskStatus.POSTPONE : undefined;
}

/**
 * How a task ended, once it is decided: SUCCESS, FAIL or ROLLBACK (statuses it went through), or
 * CANCELLED: stopped because someone asked, which is not a failure and not a status of its own
 * (the task moves through FAIL to FINISH like a failure does, with this outcome).
 */
export type TaskOutcome =
  TaskStatus.SUCCESS | TaskStatus.FAIL | TaskStatus.ROLLBACK | typeof CANCELLED_OUTCOME;

export const CANCELLED_OUTCOME = 'CANCELLED' as const;

export const TASK_OUTCOMES: readonly TaskOutcome[] = [
  TaskStatus.SUCCESS,
  TaskStatus.FAIL,
  TaskStatus.ROLLBACK,
  CANCELLED_OUTCOME,
];

/** Reads an outcome from a query string, in any case; `undefined` for anything else. */
export function parseTaskOutcome(value: unknown): TaskOutcome | undefined {
  if (typeof value !== 'string') return undefined;
  const upper = value.trim().toUpperCase();
  return (TASK_OUTCOMES as readonly string[]).includes(upper) ? (upper as TaskOutcome) : undefined;
}
