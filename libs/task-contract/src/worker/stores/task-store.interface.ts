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

/** How to build the store: in memory (default) or an SQLite file that survives restarts. */
export type TaskStoreConfig = { kind: 'memory' } | { kind: 'sqlite'; path: string };
