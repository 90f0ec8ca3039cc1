import { Injectable } from '@nestjs/common';
import { Clock } from '../common';
import { cachedFor } from '../metrics';
import {
  BACKLOG_STATUSES,
  FinishedInMinute,
  MINUTE_MS,
  TaskCountsRepository,
  TaskHistoryRepository,
  WaitingCount,
} from '../task-store';

/** How long one read of the backlog is shared: every open overview asks for it every few seconds. */
const BACKLOG_CACHE_MS = 2000;

/**
 * What an overview shows besides the counts by status: tasks finished per minute (kept with each
 * change, TaskHistoryRepository) and the backlog (the waiting tasks, read through the index of
 * due tasks: it costs what waits, and one read serves every caller for BACKLOG_CACHE_MS).
 */
@Injectable()
export class TaskOverviewService {
  private readonly backlogRead: () => Promise<{ at: number; rows: WaitingCount[] }>;

  constructor(
    private readonly history: TaskHistoryRepository,
    counts: TaskCountsRepository,
    private readonly clock: Clock,
  ) {
    this.backlogRead = cachedFor(BACKLOG_CACHE_MS, async () => {
      const at = this.clock.now();
      return { at, rows: await counts.waiting(BACKLOG_STATUSES, at) };
    });
  }

  /** The last `minutes` minutes (the current one included): from when, and the counts. */
  async finishedPerMinute(
    minutes: number,
  ): Promise<{ from: number; to: number; rows: FinishedInMinute[] }> {
    const to = this.clock.now();
    const from = (Math.floor(to / MINUTE_MS) - (minutes - 1)) * MINUTE_MS;
    return { from, to, rows: await this.history.since(from) };
  }

  /** Due tasks waiting for an attempt, by type and priority, and when they were read. */
  backlog(): Promise<{ at: number; rows: WaitingCount[] }> {
    return this.backlogRead();
  }
}
