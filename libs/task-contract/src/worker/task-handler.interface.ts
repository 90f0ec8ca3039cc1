import type { RunLog } from './attempt-log-shipper';
import { BlockingKind, NotifyEvent } from '../enums/task-kind.enum';
import { TaskStatus } from '../enums/task-status.enum';

/** What a handler sees of its task. A snapshot: it does not change under the handler. */
export interface TaskSnapshot {
  readonly taskId: string;
  readonly taskType: string;
  readonly taskName: string;
  readonly attempt: number;
  readonly fence: number;
  readonly status: TaskStatus;
  readonly params: Readonly<Record<string, unknown>>;
  readonly lockKeys: readonly string[];
  readonly result: Readonly<Record<string, unknown>> | null;
}

/** Thrown by `checkpoint()` when the scheduler cancelled the task. */
export class TaskCancelledError extends Error {
  constructor(reason = 'cancelled') {
    super(reason);
    this.name = 'TaskCancelledError';
  }
}

/** Handed to `run`: reporting and cooperation with pause and cancel. */
export interface RunContext {
  readonly task: TaskSnapshot;
  /** Aborted when the task is cancelled (notify cancel or deadline) or superseded by a new attempt. */
  readonly signal: AbortSignal;
  /** Reports progress; also counts as a heartbeat. */
  progress(percent: number, step?: string, message?: string): Promise<void>;
  /** Says the execution is alive. */
  heartbeat(): Promise<void>;
  /**
   * A safe point for a long run: returns at once normally, waits while the task is paused, and
   * throws TaskCancelledError when it was cancelled. Pausable handlers call it between steps.
   */
  checkpoint(): Promise<void>;
  /**
   * The attempt's own log: lines go to the scheduler in batches and are kept with the attempt
   * (`GET /v1/tasks/{id}/attempts/{n}/logs`, the console's task page), even if this worker dies
   * after they went. `log.pipe(child)` logs a child process's output.
   */
  readonly log: RunLog;
}

/** What a successful run returns; a failed run throws (any error becomes FAIL with its message). */
export interface RunOutcome {
  result?: Record<string, unknown>;
}

/** What `progress` and `summary` return when a handler computes them itself. */
export interface ProgressReport {
  percent: number;
  step?: string | null;
  message?: string | null;
}

/** A task type's starting retry policy, as a handler declares it. */
export interface TaskTypeDefaults {
  /** Retries after a failed attempt (0 to 100). */
  maxRetry?: number;
  /** First backoff between attempts, doubling up to `backoffMaxMs` (with jitter). */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
}

/**
 * The code a team writes for one task type. `create` and `run` are required; everything else has
 * a default (documented per method) that the worker module applies when the method is absent.
 */
export interface TaskHandler {
  /** The task type this handler serves, e.g. `mysql.failover`. */
  readonly type: string;
  /** sync: run returns the outcome; async: the call answers RUNNING and run goes on in the background. */
  readonly blocking: BlockingKind;
  /** True when `run` calls `checkpoint()`, so a RUNNING task can be paused. Default false. */
  readonly pausable?: boolean;
  /** A RUNNING task is dead when it has not beaten for this long. Default 15 000 ms. */
  readonly heartbeatTimeoutMs?: number;
  /**
   * The retry policy the scheduler starts the type with when it first hears of it (operators
   * change it later through the scheduler's task-types API, and a worker never overrides that).
   * Without it the scheduler's defaults apply: no retry.
   */
  readonly defaults?: TaskTypeDefaults;
  /**
   * A JSON Schema (draft 2020-12) of the params, sent with the registration: the scheduler refuses
   * a task whose params break it before it reaches this worker (400 naming each problem's JSON
   * pointer), and shows it with the type. Keep `create`'s own checks: a scheduler older than
   * contract 1.4.0 does not read it.
   */
  readonly paramsSchema?: Readonly<Record<string, unknown>>;
  /** A JSON Schema of the result `run` gives: shown with the type for callers; not checked. */
  readonly resultSchema?: Readonly<Record<string, unknown>>;

  /** Accept the task: check params (throw a ContractException VALIDATION_FAILED to refuse). */
  create(task: TaskSnapshot): Promise<void> | void;
  /** Do the work. */
  run(ctx: RunContext): Promise<RunOutcome | void>;
  /** Check preconditions and reserve resources. Default: nothing to prepare. */
  prepare?(task: TaskSnapshot): Promise<void> | void;
  /** Called when paused (after the status changed). Default: nothing beyond the pause gate. */
  pause?(task: TaskSnapshot): Promise<void> | void;
  /** Called when continued. Default: nothing beyond reopening the gate. */
  continue?(task: TaskSnapshot): Promise<void> | void;
  /** Undo what run did. Default: none — the call answers 501, since only the handler knows how. */
  rollback?(task: TaskSnapshot): Promise<void> | void;
  /** Check new params for a task not yet final; return the params to keep. Default: take them as given. */
  change?(
    task: TaskSnapshot,
    params: Record<string, unknown>,
  ): Promise<Record<string, unknown>> | Record<string, unknown>;
  /** Release resources after an outcome. Default: nothing to release. */
  clean?(task: TaskSnapshot): Promise<void> | void;
  /** Compute progress. Default: the last value reported through the run context. */
  progress?(task: TaskSnapshot): Promise<ProgressReport> | ProgressReport;
  /** A line for people. Default: status plus the result's keys. */
  summary?(task: TaskSnapshot): Promise<string> | string;
  /** Hear an event. Default: cancel aborts the run; other events are accepted and ignored. */
  notify?(
    task: TaskSnapshot,
    event: NotifyEvent,
    data: Record<string, unknown> | undefined,
  ): Promise<void> | void;
}

/** One run of one attempt, as seen by a RunLogListener. */
export interface RunLogEntry {
  task_id: string;
  task_type: string;
  attempt: number;
  fence: number;
  lock_keys: string[];
  started_at: number;
  ended_at?: number;
  outcome?: TaskStatus.SUCCESS | TaskStatus.FAIL;
}

/** Hears every run start and end; the template worker writes them to a log that tests read. */
export interface RunLogListener {
  runStarted(entry: RunLogEntry): void;
  runEnded(entry: Required<RunLogEntry>): void;
}
