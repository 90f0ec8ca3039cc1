import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { DataSource } from 'typeorm';
import { TransactionRunner } from '../database';
import { SqlRunner } from './sql-runner';
import { TaskCountsRepository, countKey } from './task-counts.repository';

/** A purged task as it stood: its row, lifecycle log, attempts and labels (for the export). */
export interface PurgedTask {
  task: Record<string, unknown>;
  events: Record<string, unknown>[];
  attempts: Record<string, unknown>[];
  labels: Record<string, string>;
}

const marks = (n: number): string => Array.from({ length: n }, () => '?').join(', ');

/**
 * Removes finished tasks for good (retention): the task row with its events, attempts, labels and
 * the Idempotency-Key record that made it, in one short transaction per batch. Only FINISH, the
 * final status, is ever touched: a task that is not final is never purged, whatever its age.
 */
@Injectable()
export class TaskPurgeRepository {
  constructor(
    private readonly tx: TransactionRunner,
    private readonly sql: SqlRunner,
    private readonly counts: TaskCountsRepository,
    private readonly db: DataSource,
  ) {}

  /** Ids of up to `limit` FINISH tasks of `taskType` finished before `before`, oldest first. */
  async finishedBefore(taskType: string, before: number, limit: number): Promise<string[]> {
    // (task_type, status, finished_at) is an index: the scan starts at the oldest and stops at `limit`.
    const { records } = await this.sql.exec(
      undefined,
      `SELECT task_id FROM baton_task WHERE task_type = ? AND status = 'FINISH' AND finished_at < ?
        ORDER BY finished_at LIMIT ${Math.max(1, Math.floor(limit))}`,
      [taskType, before],
    );
    return (records as { task_id: string }[]).map((r) => r.task_id);
  }

  /** The tasks with everything that goes with them, as stored (for the export before a purge). */
  async snapshot(ids: readonly string[]): Promise<PurgedTask[]> {
    if (ids.length === 0) return [];
    const rows = (q: string): Promise<Record<string, unknown>[]> =>
      this.sql.exec(undefined, q, [...ids]).then((r) => r.records as Record<string, unknown>[]);
    const p = marks(ids.length);
    const [tasks, events, attempts, labels] = await Promise.all([
      rows(`SELECT * FROM baton_task WHERE task_id IN (${p})`),
      rows(`SELECT * FROM baton_task_event WHERE task_id IN (${p}) ORDER BY id`),
      rows(`SELECT * FROM baton_task_attempt WHERE task_id IN (${p}) ORDER BY attempt`),
      rows(`SELECT * FROM baton_task_label WHERE task_id IN (${p})`),
    ]);
    const of = <T extends Record<string, unknown>>(xs: T[], id: unknown): T[] =>
      xs.filter((x) => x.task_id === id);
    return tasks.map((task) => ({
      task,
      events: of(events, task.task_id),
      attempts: of(attempts, task.task_id),
      labels: Object.fromEntries(
        of(labels, task.task_id).map((l) => [String(l.label_key), String(l.label_value)]),
      ),
    }));
  }

  /** Deletes these tasks (those still FINISH) and what goes with them; how many tasks went. */
  purge(ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return Promise.resolve(0);
    return this.tx.run(async (m) => {
      const p = marks(ids.length);
      const { records } = await this.sql.exec(
        m,
        // Locked (on MySQL): a purge running beside this one waits, then finds them gone, so
        // each task leaves the counts once.
        `SELECT task_id, task_type, tenant, idempotency_key, outcome FROM baton_task
          WHERE task_id IN (${p}) AND status = 'FINISH'${this.db.options.type === 'better-sqlite3' ? '' : ' FOR UPDATE'}`,
        [...ids],
      );
      const doomed = records as {
        task_id: string;
        task_type: string;
        tenant: string;
        idempotency_key: string | null;
        outcome: string | null;
      }[];
      if (doomed.length === 0) return 0;
      const doomedIds = doomed.map((d) => d.task_id);
      const q = marks(doomedIds.length);
      for (const table of [
        'baton_task_event',
        'baton_task_attempt',
        'baton_task_label',
        'baton_task_log_chunk',
        'baton_task_log_usage',
      ])
        await this.sql.exec(m, `DELETE FROM ${table} WHERE task_id IN (${q})`, doomedIds);
      await this.deleteIdempotency(
        m,
        doomed.filter((d) => d.idempotency_key !== null) as {
          tenant: string;
          idempotency_key: string;
        }[],
      );
      const { affected } = await this.sql.exec(
        m,
        `DELETE FROM baton_task WHERE task_id IN (${q}) AND status = 'FINISH'`,
        doomedIds,
      );
      const byKey = new Map<string, { taskType: string; status: string; n: number }>();
      for (const d of doomed) {
        const status = countKey('FINISH', d.outcome);
        const k = `${d.task_type}\u0000${status}`;
        const c = byKey.get(k) ?? { taskType: d.task_type, status, n: 0 };
        c.n -= 1;
        byKey.set(k, c);
      }
      await this.counts.add(m, [...byKey.values()]);
      return affected ?? doomedIds.length;
    });
  }

  /**
   * Idempotency-Key records older than `before` whatever became of their create (a refused one
   * leaves a record and no task): up to `limit` of them; how many went.
   */
  async purgeIdempotencyBefore(before: number, limit: number): Promise<number> {
    const { records } = await this.sql.exec(
      undefined,
      `SELECT tenant, idempotency_key FROM baton_idempotency WHERE created_at < ?
        LIMIT ${Math.max(1, Math.floor(limit))}`,
      [before],
    );
    const keys = records as { tenant: string; idempotency_key: string }[];
    if (keys.length === 0) return 0;
    await this.tx.run((m) => this.deleteIdempotency(m, keys));
    return keys.length;
  }

  private async deleteIdempotency(
    m: EntityManager,
    keys: readonly { tenant: string; idempotency_key: string }[],
  ): Promise<void> {
    if (keys.length === 0) return;
    await this.sql.exec(
      m,
      `DELETE FROM baton_idempotency WHERE ${keys.map(() => '(tenant = ? AND idempotency_key = ?)').join(' OR ')}`,
      keys.flatMap((k) => [k.tenant, k.idempotency_key]),
    );
  }
}
