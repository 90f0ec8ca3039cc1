import { Inject, Injectable } from '@nestjs/common';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';

/**
 * Which tasks this process put in the queue and has not finished with yet, so the Dispatcher
 * does not push a waiting entry again on every tick. Forgotten when the runner acks the entry;
 * an entry older than a claim lease is forgotten anyway (its runner may have died).
 */
@Injectable()
export class EnqueueTracker {
  private readonly pending = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  noteEnqueued(taskIds: readonly string[]): void {
    const now = this.clock.now();
    for (const id of taskIds) this.pending.set(id, now);
  }

  forget(taskId: string): void {
    this.pending.delete(taskId);
  }

  /** True when the task is in the queue (or being driven) on this process's account. */
  isPending(taskId: string): boolean {
    const at = this.pending.get(taskId);
    if (at === undefined) return false;
    if (at + this.config.runner.claimLeaseMs < this.clock.now()) {
      this.pending.delete(taskId);
      return false;
    }
    return true;
  }
}
