import { Inject, Injectable } from '@nestjs/common';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
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
  ) {}

  /** The fast path: due tasks go straight into the queue; the Dispatcher covers the rest. */
  async enqueue(tasks: readonly TaskModel[]): Promise<void> {
    const now = this.clock.now();
    const due = tasks.filter(
      (t) => t.dueAt !== null && t.dueAt <= now + this.config.dispatcher.intervalMs,
    );
    if (due.length === 0) return;
    try {
      await this.lanes.enqueue(due);
      this.runner.nudge();
    } catch {
      // The queue is only a fast path: the task is stored, and the Dispatcher will find it.
    }
  }
}
