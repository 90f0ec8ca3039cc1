import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { TaskStatus } from '@baton/task-contract';
import { DEFAULT_QUEUE_PREFIX, QueueConfig, SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { QUEUE_DRIVER, QueueDriver } from './queue.driver';
import { createQueueDriver } from './queue.factory';
import { EnqueueTracker } from './enqueue-tracker';

/** The retry lane lives beside the main queue, under its own keys. */
function retryLaneConfig(main: QueueConfig): QueueConfig {
  if (main.driver === 'memory') return main;
  return { ...main, prefix: `${main.prefix ?? DEFAULT_QUEUE_PREFIX}:retry` };
}

/** A task as the queues need it (a task row or a due-list entry will do). */
export interface LaneEntry {
  taskId: string;
  priority: number;
  status: TaskStatus;
  dueAt: number | null;
}

/**
 * The two queues tasks wait in (docs/architecture.md): the main lane, and a retry lane the runner
 * gives at most a share of its slots, so a retry storm slows itself down, not the fresh work
 * behind it. Every enqueue goes through here, so routing and tracking live in one place.
 */
@Injectable()
export class QueueLanes implements OnApplicationShutdown {
  readonly retry: QueueDriver;
  private readonly listeners: ((dueAt: number) => void)[] = [];

  constructor(
    @Inject(QUEUE_DRIVER) readonly main: QueueDriver,
    private readonly tracker: EnqueueTracker,
    @Inject(SCHEDULER_CONFIG) config: SchedulerConfig,
  ) {
    this.retry = createQueueDriver(retryLaneConfig(config.queue));
  }

  /** A FAIL that is due is a retry (or its final cleanup); everything else takes the main lane. */
  static isRetry(status: TaskStatus): boolean {
    return status === TaskStatus.FAIL;
  }

  /** Puts tasks in their lane and notes them as enqueued by this process (not due at all: skipped). */
  async enqueue(all: readonly LaneEntry[]): Promise<void> {
    const entries = all.filter((e): e is LaneEntry & { dueAt: number } => e.dueAt !== null);
    if (entries.length === 0) return;
    const entry = (e: { taskId: string; priority: number; dueAt: number }) => ({
      taskId: e.taskId,
      priority: e.priority,
      dueAt: e.dueAt,
    });
    const retries = entries.filter((e) => QueueLanes.isRetry(e.status));
    const main = entries.filter((e) => !QueueLanes.isRetry(e.status));
    if (main.length) await this.main.enqueue(main.map(entry));
    if (retries.length) await this.retry.enqueue(retries.map(entry));
    this.tracker.noteEnqueued(entries.map((e) => e.taskId));
    for (const due of new Set(entries.map((e) => e.dueAt))) for (const l of this.listeners) l(due);
  }

  /** Told each distinct due time this process enqueued (the runner wakes for it). */
  onEnqueued(listener: (dueAt: number) => void): void {
    this.listeners.push(listener);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.retry.close();
  }
}
