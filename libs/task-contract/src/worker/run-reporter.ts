import { Logger } from '@nestjs/common';
import { errorMessage } from '../util/error-message';
import { TaskExecution } from './task-execution';
import { TaskRecord } from './task-record';
import { WorkerCallbacks } from './worker-callbacks.interface';

type Progress = { percent: number; step?: string; message?: string };

/**
 * Tells the scheduler how one run goes: heartbeats and progress while it runs, the outcome when
 * it ends. A failed report is logged, never fatal: the scheduler also polls.
 *
 * Reports go out in the background, one at a time, newest first: the handler never waits on the
 * network, and a slow scheduler gets fewer, fresher reports. A progress waiting to go is not
 * replaced by a plain heartbeat (a progress is one too).
 */
export class RunReporter {
  private sending: Promise<void> | undefined;
  private queued: { progress?: Progress } | undefined;

  constructor(
    private readonly callbacks: WorkerCallbacks,
    private readonly execution: TaskExecution,
    private readonly logger: Logger,
  ) {}

  /** Queues a heartbeat, or a progress (which is a heartbeat too). */
  report(progress?: Progress): void {
    const item = { progress };
    this.queued = item.progress || !this.queued ? item : this.queued;
    if (this.sending) return;
    this.sending = this.drain();
  }

  /**
   * Reports the outcome the run wrote. Reports still waiting are dropped and the one being sent
   * is let finish first, so an older progress never overtakes the outcome.
   */
  async completed(record: TaskRecord): Promise<void> {
    this.queued = undefined;
    await this.sending;
    await this.callbacks.completed(record).catch((err: unknown) => {
      // The scheduler's Checker polls status, so a lost callback delays, never loses, the outcome.
      this.logger.warn(`completion callback for ${record.task_id} failed: ${errorMessage(err)}`);
    });
  }

  private async drain(): Promise<void> {
    const { taskId, attempt, fence } = this.execution;
    while (this.queued) {
      const { progress } = this.queued;
      this.queued = undefined;
      const call = progress
        ? this.callbacks.progress(taskId, attempt, fence, progress)
        : this.callbacks.heartbeat(taskId, attempt, fence);
      await call.catch((err: unknown) =>
        this.logger.warn(`callback for ${taskId} failed: ${errorMessage(err)}`),
      );
    }
    this.sending = undefined;
  }
}
