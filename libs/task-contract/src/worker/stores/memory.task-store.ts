import { Clock, systemClock } from '@baton/time';
import { cloneJson } from '../../util/clone-json';
import { TaskRecord } from '../task-record';
import {
  DEFAULT_RETAIN_ENDED_MS,
  ENDED_STATUSES,
  EndedRetention,
  TaskStore,
} from './task-store.interface';

/** Most ended tasks kept in memory, whatever their age (a burst must not outgrow the heap). */
export const DEFAULT_MAX_ENDED = 100_000;

/**
 * Keeps tasks in a Map; they are gone when the process ends. The default.
 *
 * A task that ended is kept `retainEndedMs`, and at most `maxEnded` of them, oldest dropped
 * first (see EndedRetention). A task in any other status is never dropped.
 */
export class MemoryTaskStore implements TaskStore {
  private readonly tasks = new Map<string, TaskRecord>();
  /** Ended tasks by the time they ended, oldest first (a Map keeps insertion order). */
  private readonly ended = new Map<string, number>();
  private readonly retainMs: number;
  private readonly maxEnded: number;
  private readonly clock: Clock;

  /** `clock`: when a task ended, and how old it is. Default: systemClock. */
  constructor(opts: EndedRetention & { maxEnded?: number; clock?: Clock } = {}) {
    this.retainMs = opts.retainEndedMs ?? DEFAULT_RETAIN_ENDED_MS;
    this.maxEnded = opts.maxEnded ?? DEFAULT_MAX_ENDED;
    this.clock = opts.clock ?? systemClock;
  }

  async get(taskId: string): Promise<TaskRecord | undefined> {
    const found = this.tasks.get(taskId);
    return found && cloneJson(found);
  }

  async findByName(taskName: string, limit: number): Promise<TaskRecord[]> {
    const matches: TaskRecord[] = [];
    for (const record of this.tasks.values())
      if (record.task_name === taskName) matches.push(record);
    return matches
      .sort((a, b) => b.created_at.localeCompare(a.created_at))
      .slice(0, limit)
      .map((r) => cloneJson(r));
  }

  async save(record: TaskRecord): Promise<void> {
    this.tasks.set(record.task_id, cloneJson(record));
    this.ended.delete(record.task_id);
    if (ENDED_STATUSES.has(record.status)) this.ended.set(record.task_id, this.clock.now());
    this.forget();
  }

  /** Tasks held now. */
  get size(): number {
    return this.tasks.size;
  }

  async close(): Promise<void> {
    this.tasks.clear();
    this.ended.clear();
  }

  /** Drops the oldest ended tasks past the age or the count. */
  private forget(): void {
    const cutoff = this.clock.now() - this.retainMs;
    for (const [taskId, at] of this.ended) {
      if (at > cutoff && this.ended.size <= this.maxEnded) break;
      this.ended.delete(taskId);
      this.tasks.delete(taskId);
    }
  }
}
