import { Injectable } from '@nestjs/common';
import { TaskStatus } from '@baton/task-contract';
import { DataSource, EntityManager } from 'typeorm';
import { NewTaskStatusChange, TaskChangeWriter } from './task-change-feed';
import { SqlRunner } from './sql-runner';

/** Tasks of one type in one status (FINISH: with one outcome), or a change to that number. */
export interface TaskCount {
  taskType: string;
  status: string;
  /** For FINISH, the outcome the count is of; null otherwise (and for a FINISH without one). */
  outcome?: string | null;
  n: number;
}

/**
 * The count's key in `baton_task_count.status`: the status, and for FINISH its outcome
 * (`FINISH:SUCCESS`, at most 16 characters), so finished tasks are counted by outcome.
 */
export const countKey = (status: string, outcome: string | null | undefined): string =>
  status === TaskStatus.FINISH && outcome ? `${status}:${outcome}` : status;

/** A stored key back as status and outcome. */
function fromKey(key: string): { status: string; outcome: string | null } {
  const at = key.indexOf(':');
  return at < 0
    ? { status: key, outcome: null }
    : { status: key.slice(0, at), outcome: key.slice(at + 1) };
}

/** Tasks of one type and priority due and not started, and the oldest due time among them. */
export interface WaitingCount {
  taskType: string;
  priority: number;
  n: number;
  oldestDueAt: number;
}

/** Statuses of a task that waits for an attempt (and FAIL with a retry to come): its backlog. */
export const BACKLOG_STATUSES: readonly TaskStatus[] = [
  TaskStatus.INIT,
  TaskStatus.POSTPONE,
  TaskStatus.NONE,
];

/** Shards of each count on MySQL: concurrent transactions pick one at random. */
const SHARDS = 16;

/**
 * Tasks by type and status, maintained in the transaction of every change (a writer of the
 * change feed: a new task adds one to its status, a move takes one from `from` and adds one to
 * `to`) and of every purge, so the counts are exact and reading them never scans the task table.
 * A count is spread over shards: two transactions adding to the same count at once would wait on
 * one row until the first commits; with a shard each, they seldom meet.
 */
@Injectable()
export class TaskCountsRepository implements TaskChangeWriter {
  readonly name = 'task-counts';
  private readonly sqlite: boolean;

  constructor(
    db: DataSource,
    private readonly sql: SqlRunner,
  ) {
    this.sqlite = db.options.type === 'better-sqlite3';
  }

  async write(m: EntityManager, changes: readonly NewTaskStatusChange[]): Promise<boolean> {
    const deltas = new Map<string, TaskCount>();
    const add = (taskType: string, status: string, n: number): void => {
      const key = `${taskType}\u0000${status}`;
      const d = deltas.get(key);
      if (d) d.n += n;
      else deltas.set(key, { taskType, status, n });
    };
    for (const c of changes) {
      if (c.from !== null) add(c.taskType, countKey(c.from, c.fromOutcome), -1);
      add(c.taskType, countKey(c.to, c.outcome), 1);
    }
    await this.add(m, [...deltas.values()]);
    // Nothing for the relay to hand over: the counts committed with the change.
    return false;
  }

  /** Adds these changes to the counts, in the caller's transaction. */
  async add(m: EntityManager, deltas: readonly TaskCount[]): Promise<void> {
    // In one order, so two transactions take the rows they share in the same order (no deadlock).
    const rows = deltas
      .filter((d) => d.n !== 0)
      .sort((a, b) =>
        a.taskType === b.taskType
          ? a.status.localeCompare(b.status)
          : a.taskType.localeCompare(b.taskType),
      );
    if (rows.length === 0) return;
    const shard = this.sqlite ? 0 : Math.floor(Math.random() * SHARDS);
    const values = rows.map(() => '(?, ?, ?, ?)').join(', ');
    const upsert = this.sqlite
      ? 'ON CONFLICT (shard, task_type, status) DO UPDATE SET n = n + excluded.n'
      : 'ON DUPLICATE KEY UPDATE n = n + VALUES(n)';
    await this.sql.exec(
      m,
      `INSERT INTO baton_task_count (shard, task_type, status, n) VALUES ${values} ${upsert}`,
      rows.flatMap((d) => [shard, d.taskType, d.status, d.n]),
    );
  }

  /** Every count above zero, by type and status. */
  async totals(): Promise<TaskCount[]> {
    const { records } = await this.sql.exec(
      undefined,
      `SELECT task_type, status, SUM(n) AS n FROM baton_task_count GROUP BY task_type, status`,
      [],
    );
    return (records as { task_type: string; status: string; n: number | string }[])
      .map((r) => ({ taskType: r.task_type, ...fromKey(r.status), n: Number(r.n) }))
      .filter((c) => c.n > 0);
  }

  /**
   * The backlog: tasks that were meant to start by `now` (no start_time, or one passed) and are
   * not done — in one of `statuses`, or FAIL with a retry to come, due or still backing off (a
   * type no worker serves keeps its tasks there: work to scale on) — by type and priority, with
   * the oldest time they were meant to start from (start_time, else creation). Read through the
   * (status, due_at) index: it costs what waits, not what was ever stored.
   */
  async waiting(statuses: readonly string[], now: number): Promise<WaitingCount[]> {
    const { records } = await this.sql.exec(
      undefined,
      `SELECT task_type, priority, COUNT(*) AS n, MIN(COALESCE(start_time, created_at)) AS oldest
        FROM baton_task
        WHERE (status IN (${statuses.map(() => '?').join(', ')}) OR (status = 'FAIL' AND due_at IS NOT NULL))
          AND (start_time IS NULL OR start_time <= ?)
        GROUP BY task_type, priority`,
      [...statuses, now],
    );
    type Row = {
      task_type: string;
      priority: number | string;
      n: number | string;
      oldest: number | string;
    };
    return (records as Row[]).map((r) => ({
      taskType: r.task_type,
      priority: Number(r.priority),
      n: Number(r.n),
      oldestDueAt: Number(r.oldest),
    }));
  }
}
