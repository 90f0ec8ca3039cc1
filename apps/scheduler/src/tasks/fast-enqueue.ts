import { Inject, Injectable } from '@nestjs/common';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { BackendGate } from '../health';
import { QueueLanes } from '../queue';
import { RunnerService } from '../runner';
import { TaskModel } from '../task-store';

/**
 * The fast path from the API to the runner: a task due now goes straight into the queue and
 * the runner looks at once. The Dispatcher finds whatever this misses.
 */
@Injectable()
export class FastEnqueue {
  constructor(
    private readonly lanes: QueueLanes,
    private readonly runner: RunnerService,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly gate: BackendGate,
  ) {}

  /** The fast path: due tasks go straight into the queue; the Dispatcher covers the rest. */
  async enqueue(tasks: readonly TaskModel[]): Promise<void> {
    const now = this.clock.now();
    const due = tasks.filter(
      (t) => t.dueAt !== null && t.dueAt <= now + this.config.dispatcher.intervalMs,
    );
    // A queue found down is not waited on: the Dispatcher enqueues them once it is back.
    if (due.length === 0 || this.gate.isDown('queue')) return;
    try {
      await this.lanes.enqueue(due);
      this.runner.nudge();
    } catch {
      // The queue is only a fast path: the task is stored, and the Dispatcher will find it.
    }
  }
}
