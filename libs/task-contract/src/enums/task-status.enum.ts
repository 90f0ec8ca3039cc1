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
