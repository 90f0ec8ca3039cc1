import { TaskCancelledError } from './task-handler.interface';

/**
 * One in-flight run of one attempt in this process: the abort switch for cancel, and the gate
 * that `checkpoint()` waits on while the task is paused.
 */
export class TaskExecution {
  readonly abort = new AbortController();
  private gate: { promise: Promise<void>; open: () => void } | null = null;
  /** Settles when the run's outcome has been written. */
  done: Promise<void> = Promise.resolve();
  private leaving = false;

  constructor(
    readonly taskId: string,
    readonly attempt: number,
    /** The fence the run started with; raised when a newer one is accepted for the task. */
    private fenceSeen: number,
    readonly taskType = '',
  ) {}

  /** The highest fence accepted for the task: what the run's callbacks carry (the contract). */
  get fence(): number {
    return this.fenceSeen;
  }

  /** A newer fence was accepted for the task (a scheduler that took it over). */
  raiseFence(fence: number): void {
    this.fenceSeen = Math.max(this.fenceSeen, fence);
  }

  pause(): void {
    if (this.gate) return;
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    this.gate = { promise, open };
  }

  resume(): void {
    const gate = this.gate;
    this.gate = null;
    gate?.open();
  }

  cancel(reason: string): void {
    if (!this.abort.signal.aborted) this.abort.abort(new TaskCancelledError(reason));
    this.resume();
  }

  /**
   * This worker process is going away: the run is stopped like a cancel, but its attempt is left
   * RUNNING with no outcome, for the scheduler to recover (the contract's crash recovery), not
   * failed: the work did not fail, its process ended.
   */
  shutdown(reason: string): void {
    this.leaving = true;
    this.cancel(reason);
  }

  /** Stopped by `shutdown`: no outcome is written for the attempt. */
  get leftForRecovery(): boolean {
    return this.leaving;
  }

  /** Stopped on the scheduler's word (cancel, deadline, a newer attempt): nothing to report. */
  get stoppedByScheduler(): boolean {
    return this.abort.signal.aborted && !this.leaving;
  }

  /** Returns when the run may go on; throws when it was cancelled. */
  async checkpoint(): Promise<void> {
    this.throwIfCancelled();
    while (this.gate) {
      await this.gate.promise;
      this.throwIfCancelled();
    }
  }

  private throwIfCancelled(): void {
    if (this.abort.signal.aborted) {
      const reason: unknown = this.abort.signal.reason;
      throw reason instanceof Error ? reason : new TaskCancelledError();
    }
  }
}
