import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { TaskStatus } from '@baton/task-contract';
import { Clock } from '@baton/time';
import { DEFAULT_QUEUE_PREFIX, QueueConfig, SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { QUEUE_DRIVER, QueueDriver } from './queue.driver';
import { createFairShare, createQueueDriver } from './queue.factory';
import { EnqueueTracker } from './enqueue-tracker';
import { FairShare } from './fair-share';

/** The retry and overflow lanes live beside the main queue, under keys of their own. */
function laneConfig(main: QueueConfig, lane: string): QueueConfig {
  if (main.driver === 'memory') return main;
  return { ...main, prefix: `${main.prefix ?? DEFAULT_QUEUE_PREFIX}:${lane}` };
}

/** The queues tasks wait in, in the order the runner serves them. */
export const LANES = ['main', 'retry', 'overflow'] as const;
export type Lane = (typeof LANES)[number];

/** A task as the queues need it (a task row or a due-list entry will do). */
export interface LaneEntry {
  taskId: string;
  priority: number;
  status: TaskStatus;
  dueAt: number | null;
  /** Whose task it is: the fair share between tenants routes by it (none: the main lane). */
  tenant?: string;
}

/**
 * The queues tasks wait in (docs/architecture.md): the main lane; a retry lane the runner gives at
 * most a share of its slots, so a retry storm slows itself down, not the fresh work behind it;
 * and an overflow lane for a tenant's entries beyond its fair share of the fleet's starts, served
 * with the slots the others leave free (FairShare). Every enqueue goes through here, so routing
 * and tracking live in one place.
 */
@Injectable()
export class QueueLanes implements OnApplicationShutdown {
  readonly retry: QueueDriver;
  readonly overflow: QueueDriver;
  private readonly fair: FairShare;
  private readonly listeners: ((dueAt: number) => void)[] = [];

  constructor(
    @Inject(QUEUE_DRIVER) readonly main: QueueDriver,
    private readonly tracker: EnqueueTracker,
    @Inject(SCHEDULER_CONFIG) config: SchedulerConfig,
    clock: Clock,
  ) {
    this.retry = createQueueDriver(laneConfig(config.queue, 'retry'), clock);
    this.overflow = createQueueDriver(laneConfig(config.queue, 'overflow'), clock);
    this.fair = createFairShare(config.queue, config.dispatcher.fairShareMin, clock);
  }

  /** A lane's queue by name. */
  lane(name: Lane): QueueDriver {
    return name === 'main' ? this.main : name === 'retry' ? this.retry : this.overflow;
  }

  /** The runner started `n` entries: the fleet's throughput, from which fair shares follow. */
  started(n: number): void {
    this.fair.started(n);
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
    const { main, overflow } = await this.share(
      entries.filter((e) => !QueueLanes.isRetry(e.status)),
    );
    if (main.length) await this.main.enqueue(main.map(entry));
    if (overflow.length) await this.overflow.enqueue(overflow.map(entry));
    if (retries.length) await this.retry.enqueue(retries.map(entry));
    this.tracker.noteEnqueued(entries.map((e) => e.taskId));
    for (const due of new Set(entries.map((e) => e.dueAt))) for (const l of this.listeners) l(due);
  }

  /** Splits fresh entries: each tenant's within its fair share to main, the rest to overflow. */
  private async share<T extends LaneEntry>(entries: T[]): Promise<{ main: T[]; overflow: T[] }> {
    const main: T[] = [];
    const overflow: T[] = [];
    const byTenant = new Map<string, T[]>();
    for (const e of entries) {
      if (e.tenant === undefined) main.push(e);
      else byTenant.set(e.tenant, [...(byTenant.get(e.tenant) ?? []), e]);
    }
    for (const [tenant, mine] of byTenant) {
      // Should the counters be out of reach, everything takes the main lane (as before lanes).
      const within = await this.fair.admit(tenant, mine.length).catch(() => mine.length);
      // The share goes to the tenant's most important entries first, the earliest due among equals.
      mine.sort((a, b) => b.priority - a.priority || (a.dueAt ?? 0) - (b.dueAt ?? 0));
      main.push(...mine.slice(0, within));
      overflow.push(...mine.slice(within));
    }
    return { main, overflow };
  }

  /** Told each distinct due time this process enqueued (the runner wakes for it). */
  onEnqueued(listener: (dueAt: number) => void): void {
    this.listeners.push(listener);
  }

  /** Every lane's queue connection given up and opened anew (the queue's check went unanswered). */
  reconnect(): void {
    for (const lane of [this.main, this.retry, this.overflow]) lane.reconnect?.();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.retry.close();
    await this.overflow.close();
    await this.fair.close();
  }
}
