import { BlockingKind, RepetitionKind, TaskOutcome, TaskStatus } from '@baton/task-contract';

/** A task as services see it (the entity never leaves the repository). Times are epoch ms. */
export interface TaskModel {
  taskId: string;
  taskType: string;
  taskName: string;
  tenant: string;
  labels: Record<string, string>;
  status: TaskStatus;
  version: number;
  attempt: number;
  /**
   * Attempts opened because the one before never reached (or was taken from) its worker; they do
   * not count against max_retry (`countedAttempts`).
   */
  moves: number;
  priority: number;
  blocking: BlockingKind;
  repetition: RepetitionKind;
  params: Record<string, unknown>;
  lockKeys: string[];
  requestedUrl: string | null;
  workerId: string | null;
  workerUrl: string | null;
  parentTaskId: string | null;
  controlTaskId: string | null;
  startTime: number | null;
  deadlineSecond: number | null;
  lockTimeout: number | null;
  maxRetry: number;
  idempotencyKey: string | null;
  callbackUrl: string | null;
  dueAt: number | null;
  owner: string | null;
  leaseUntil: number | null;
  fence: number;
  result: Record<string, unknown> | null;
  error: { message: string; code?: string | null } | null;
  progress: { percent: number; step: string | null; message: string | null } | null;
  heartbeatAt: number | null;
  /** What keeps it from starting now, as it was last checked; null when nothing does. */
  waiting: TaskWait | null;
  outcome: TaskOutcome | null;
  pausedFrom: TaskStatus | null;
  cancelRequested: boolean;
  /**
   * rollback: a person asked for it; decide: a failure reported by the worker awaits the retry
   * decision; restart: a permanent task's life ended in SUCCESS and its next one is due; rerun: a
   * person asked for a new attempt of a finished task.
   */
  pendingAction: 'rollback' | 'decide' | 'restart' | 'rerun' | null;
  createdAt: number;
  updatedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

/** Fields a transition may change besides the status. */
export type TaskPatch = Partial<
  Pick<
    TaskModel,
    | 'attempt'
    | 'moves'
    | 'params'
    | 'workerId'
    | 'workerUrl'
    | 'dueAt'
    | 'owner'
    | 'leaseUntil'
    | 'result'
    | 'error'
    | 'progress'
    | 'heartbeatAt'
    | 'waiting'
    | 'outcome'
    | 'pausedFrom'
    | 'cancelRequested'
    | 'pendingAction'
    | 'startedAt'
    | 'finishedAt'
  >
>;

/**
 * A wait, told once: the same reason found again (`why`, which names the holder) counts a check
 * on it; another reason starts a new wait.
 */
export interface TaskWait {
  /** What stands in the way: start_time, rate_limit, concurrency_limit, lock_key, no_worker. */
  code: string;
  why: string;
  /** When it was first found. */
  since: number;
  /** When it was last found. */
  last: number;
  /** How many times it was found. */
  checks: number;
}

/** One line of the lifecycle log. */
export interface TaskEventModel {
  id: number;
  taskId: string;
  from: TaskStatus | null;
  to: TaskStatus;
  reason: string;
  actor: string;
  attempt: number;
  at: number;
  /** The same wait found again this many times in all (1: once); `lastAt` the last. */
  repeats: number;
  lastAt: number | null;
}

export interface TaskAttemptModel {
  taskId: string;
  attempt: number;
  workerId: string | null;
  workerUrl: string | null;
  fence: number;
  startedAt: number;
  endedAt: number | null;
  outcome: TaskStatus | null;
  error: string | null;
  /**
   * The worker is to be told to drop the attempt ('pending'), was told or found gone ('done'), or
   * nothing was owed (null: the attempt ran its course, or is the current one).
   */
  drop: 'pending' | 'done' | null;
  droppedAt: number | null;
}

/** Filters of the task list. */
export interface TaskFilter {
  taskType?: string;
  taskName?: string;
  status?: TaskStatus[];
  outcome?: TaskOutcome[];
  tenant?: string;
  label?: { key: string; value: string };
  createdFrom?: number;
  createdTo?: number;
  /** Names that start with it (case as stored). */
  namePrefix?: string;
  /** Names holding every one of these words, each as a word or the start of one (`searchWords`). */
  nameWords?: string[];
  /** This one task (a search box given an id). */
  taskId?: string;
  parentTaskId?: string;
  controlTaskId?: string;
  /** The worker of the current or last attempt. */
  workerId?: string;
  /** At least this many attempts opened. */
  attemptsMin?: number;
}

/** Orders of the task list. `created` is the order of the ids, which are made time-ordered. */
export const TASK_SORTS = ['created', 'updated', 'priority'] as const;
export type TaskSort = (typeof TASK_SORTS)[number];

export interface TaskOrder {
  sort: TaskSort;
  dir: 'asc' | 'desc';
}

/**
 * Where a page starts: after the task of this id, which held `key` in the sort's column (none
 * for `created`, whose column is the id itself).
 */
export interface TaskSeek {
  key?: number;
  taskId: string;
}
