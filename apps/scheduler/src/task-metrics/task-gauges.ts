import { Injectable } from '@nestjs/common';
import { Clock } from '../common';
import { Metrics, Series, cachedFor } from '../metrics';
import { BACKLOG_STATUSES, TaskCountsRepository } from '../task-store';

/** How long a gauge read from the database is reused: scrapes of several Prometheus share it. */
export const GAUGE_CACHE_MS = 5000;

/**
 * Gauges of the stored tasks, the same on every instance: `baton_tasks{task_type,status}` from
 * the maintained counts (no scan of the task table), and the backlog, `baton_task_backlog`
 * {task_type,priority} and `baton_task_backlog_oldest_seconds{task_type}`: tasks due and not
 * started (INIT, POSTPONE, NONE or FAIL with a retry to come; start time passed), the signal to
 * scale workers on.
 */
@Injectable()
export class TaskGauges {
  constructor(
    private readonly counts: TaskCountsRepository,
    private readonly clock: Clock,
  ) {}

  register(metrics: Metrics): void {
    metrics.source(
      'baton_tasks',
      cachedFor(GAUGE_CACHE_MS, async () => {
        // One series per type and status: FINISH's counts by outcome add up to one.
        const byKey = new Map<
          string,
          { labels: { task_type: string; status: string }; value: number }
        >();
        for (const c of await this.counts.totals()) {
          const key = `${c.taskType}\u0000${c.status}`;
          const s = byKey.get(key) ?? {
            labels: { task_type: c.taskType, status: c.status },
            value: 0,
          };
          s.value += c.n;
          byKey.set(key, s);
        }
        return [...byKey.values()];
      }),
    );
    const backlog = cachedFor(GAUGE_CACHE_MS, () => this.backlog());
    metrics.source('baton_task_backlog', async () => (await backlog()).backlog);
    metrics.source('baton_task_backlog_oldest_seconds', async () => (await backlog()).oldest);
  }

  async backlog(): Promise<{ backlog: Series[]; oldest: Series[] }> {
    const now = this.clock.now();
    const rows = await this.counts.waiting(BACKLOG_STATUSES, now);
    const oldest = new Map<string, number>();
    for (const r of rows)
      oldest.set(r.taskType, Math.min(oldest.get(r.taskType) ?? r.oldestDueAt, r.oldestDueAt));
    return {
      backlog: rows.map((r) => ({
        labels: { task_type: r.taskType, priority: String(r.priority) },
        value: r.n,
      })),
      oldest: [...oldest].map(([task_type, due]) => ({
        labels: { task_type },
        value: Math.max(0, now - due) / 1000,
      })),
    };
  }
}
