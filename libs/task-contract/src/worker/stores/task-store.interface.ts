import { TaskStatus } from '../../enums/task-status.enum';
import { TaskRecord } from '../task-record';

/**
 * Where a worker keeps its tasks. The worker module serialises calls per task, so a store needs
 * no locking of its own; it must return copies, never objects the caller can alias.
 */
export interface TaskStore {
  get(taskId: string): Promise<TaskRecord | undefined>;
  /** Tasks with this name, newest first, at most `limit`. */
  findByName(taskName: string, limit: number): Promise<TaskRecord[]>;
  /** Insert or replace the record with this task_id. */
  save(record: TaskRecord): Promise<void>;
  close(): Promise<void>;
}

/** How long a task that ended is kept before the store forgets it (default one hour). */
export const DEFAULT_RETAIN_ENDED_MS = 3_600_000;

/** Statuses in which a task has ended on the worker: nothing runs, nothing waits on the worker. */
export const ENDED_STATUSES: ReadonlySet<TaskStatus> = new Set([
  TaskStatus.SUCCESS,
  TaskStatus.FAIL,
  TaskStatus.ROLLBACK,
  TaskStatus.FINISH,
]);

/**
 * A task that ended (SUCCESS, FAIL, ROLLBACK, FINISH) is kept this long, then forgotten, so a
 * long-lived worker does not grow without bound. The scheduler settles an outcome within seconds;
 * a retry or the next life of a forgotten task is simply created afresh. A task in any other
 * status is kept.
 */
export interface EndedRetention {
  retainEndedMs?: number;
}

/** How to build the store: in memory (default) or an SQLite file that survives restarts. */
export type TaskStoreConfig =
  | ({ kind: 'memory'; maxEnded?: number } & EndedRetention)
  | ({ kind: 'sqlite'; path: string } & EndedRetention);
