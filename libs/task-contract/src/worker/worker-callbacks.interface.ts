import { AttemptLogBatchDto, AttemptLogVerdict, LogLineDto } from '../dto/callback.dto';
import { TaskRecord } from './task-record';

/**
 * How an async run's news reaches the scheduler. The worker module calls it; `CallbackClient`
 * implements it over HTTP. Failures are logged, never fatal: the scheduler also polls.
 */
export interface WorkerCallbacks {
  completed(record: TaskRecord): Promise<void>;
  heartbeat(taskId: string, attempt: number, fence: number): Promise<void>;
  progress(
    taskId: string,
    attempt: number,
    fence: number,
    progress: { percent: number; step?: string; message?: string },
  ): Promise<void>;
  /** Lines a run logged (any type); retried by the caller until it goes or is refused (409). */
  logs?(taskId: string, attempt: number, fence: number, lines: LogLineDto[]): Promise<void>;
  /**
   * The lines of many attempts in one call (`PUT /v1/attempt-logs`): a verdict per batch, in
   * order; rejects when the call itself failed (retried whole by the caller).
   */
  logsMany?(batches: AttemptLogBatchDto[]): Promise<AttemptLogVerdict[]>;
}
