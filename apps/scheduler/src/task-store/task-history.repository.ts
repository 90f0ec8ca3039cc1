import { Injectable } from '@nestjs/common';
import { TaskStatus } from '@baton/task-contract';
import { DataSource, EntityManager } from 'typeorm';
import { NewTaskStatusChange, TaskChangeWriter } from './task-change-feed';
import { SqlRunner } from './sql-runner';

export const MINUTE_MS = 60_000;
/** How many minutes are kept (and can be read); older ones are pruned by the retention pass. */
export const HISTORY_MINUTES = 360;

/** Tasks of one type that finished with one outcome within one minute. */
export interface FinishedInMinute {
  /** The minute's first millisecond (epoch ms, a multiple of 60,000). */
  minute: number;
  taskType: string;
  outcome: string;
  n: number;
}

/** Shards of each minute's count on MySQL, as for the counts by status. */
const SHARDS = 16;

/**
 * Tasks finished per minute, by type and outcome: written in the transaction of each move to
 * FINISH (a writer of the change feed, as TaskCountsRepository is), so a chart of the last hour
 * reads a few hundred small rows at most and never the task table. Old minutes are pruned.
 */
@Injectable()
export class TaskHistoryRepository implements TaskChangeWriter {
  readonly name = 'task-history';
  private readonly sqlite: boolean;

  constructor(
    db: DataSource,
    private readonly sql: SqlRunner,
  ) {
    this.sqlite = db.options.type === 'better-sqlite3';
  }

  async write(m: EntityManager, changes: readonly NewTaskStatusChange[]): Promise<boolean> {
    const rows = new Map<string, FinishedInMinute>();
    for (const c of changes) {
      if (c.to !== TaskStatus.FINISH || c.outcome === null) continue;
      const minute = Math.floor(c.at / MINUTE_MS) * MINUTE_MS;
      const key = `${minute}\u0000${c.taskType}\u0000${c.outcome}`;
      const row = rows.get(key);
      if (row) row.n++;
      else rows.set(key, { minute, taskType: c.taskType, outcome: c.outcome, n: 1 });
    }
    if (rows.size === 0) return false;
    // In one order, so two transactions take the rows they share in the same order (no deadlock).
    const sorted = [...rows.values()].sort(
      (a, b) =>
        a.minute - b.minute ||
        a.taskType.localeCompare(b.taskType) ||
        a.outcome.localeCompare(b.outcome),
    );
    const shard = this.sqlite ? 0 : Math.floor(Math.random() * SHARDS);
    const upsert = this.sqlite
      ? 'ON CONFLICT (minute, task_type, outcome, shard) DO UPDATE SET n = n + excluded.n'
      : 'ON DUPLICATE KEY UPDATE n = n + VALUES(n)';
    await this.sql.exec(
      m,
      `INSERT INTO baton_task_minute (minute, task_type, outcome, shard, n)
        VALUES ${sorted.map(() => '(?, ?, ?, ?, ?)').join(', ')} ${upsert}`,
      sorted.flatMap((r) => [r.minute, r.taskType, r.outcome, shard, r.n]),
    );
    // Nothing for the relay to hand over: the rows committed with the change.
    return false;
  }

  /** The minutes from `from` (inclusive, a minute's start) on, every count above zero. */
  async since(from: number): Promise<FinishedInMinute[]> {
    const { records } = await this.sql.exec(
      undefined,
      `SELECT minute, task_type, outcome, SUM(n) AS n FROM baton_task_minute
        WHERE minute >= ? GROUP BY minute, task_type, outcome ORDER BY minute`,
      [from],
    );
    type Row = { minute: number | string; task_type: string; outcome: string; n: number | string };
    return (records as Row[])
      .map((r) => ({
        minute: Number(r.minute),
        taskType: r.task_type,
        outcome: r.outcome,
        n: Number(r.n),
      }))
      .filter((r) => r.n > 0);
  }

  /** Drops the minutes before `before`; answers how many rows went. */
  async prune(before: number): Promise<number> {
    const { affected } = await this.sql.exec(
      undefined,
      'DELETE FROM baton_task_minute WHERE minute < ?',
      [before],
    );
    return affected ?? 0;
  }
}
