import { Inject, Injectable } from '@nestjs/common';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { BackendGate } from '../health';
import { QueueLanes } from '../queue';
import { RunnerService } from '../runner';
import { TaskModel } from '../task-store';

/**
 * How long a create waits for its fast path. The queue answers in a millisecond or two; one that
 * does not (a silent partition the readiness check has not found yet) is not waited out: the
 * task is stored, and the create answers while the enqueue goes on or fails on its own bound.
 */
export const FAST_ENQUEUE_WAIT_MS = 250;

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
    const enqueued = this.lanes.enqueue(due).then(
      () => this.runner.nudge(),
      // The queue is only a fast path: the task is stored, and the Dispatcher will find it.
      () => undefined,
    );
    const limit = this.clock.deadline(FAST_ENQUEUE_WAIT_MS);
    try {
      await Promise.race([
        enqueued,
        new Promise<void>((resolve) =>
          limit.signal.addEventListener('abort', () => resolve(), { once: true }),
        ),
      ]);
    } finally {
      limit.cancel();
    }
  }
}
