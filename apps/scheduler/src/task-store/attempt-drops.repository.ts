import { Injectable } from '@nestjs/common';
import { SqlRunner } from './sql-runner';

/** An attempt whose worker is to be told to drop it. */
export interface AttemptDrop {
  id: number;
  taskId: string;
  taskType: string;
  attempt: number;
  workerUrl: string;
  /** The fence the attempt was opened with: the worker refuses it once it holds a newer one. */
  fence: number;
  tries: number;
  /** When the attempt ended (the drop has been owed since). */
  endedAt: number;
  dueAt: number;
}

/**
 * The attempts the scheduler gave up while their worker may still hold them. Rows are marked in
 * the transaction that ends the attempt (`TaskChange.attemptEnd.drop`); whoever sends the drop
 * claims the row first by moving its due time (a compare-and-set), so two schedulers do not both
 * send it, and one that dies mid-way leaves it due again later.
 */
@Injectable()
export class AttemptDropsRepository {
  constructor(private readonly sql: SqlRunner) {}

  async due(now: number, limit: number): Promise<AttemptDrop[]> {
    const { records } = await this.sql.exec(
      undefined,
      'SELECT a.id, a.task_id, t.task_type, a.attempt, a.worker_url, a.fence, a.drop_tries, a.ended_at, a.drop_due_at' +
        ' FROM baton_task_attempt a JOIN baton_task t ON t.task_id = a.task_id' +
        ' WHERE a.drop_due_at <= ? ORDER BY a.drop_due_at LIMIT ?',
      [now, limit],
    );
    return (records as Record<string, unknown>[]).map((r) => ({
      id: Number(r.id),
      taskId: String(r.task_id),
      taskType: String(r.task_type),
      attempt: Number(r.attempt),
      workerUrl: String(r.worker_url),
      fence: Number(r.fence),
      tries: Number(r.drop_tries),
      endedAt: Number(r.ended_at ?? r.drop_due_at),
      dueAt: Number(r.drop_due_at),
    }));
  }

  /** Takes the drop for this process until `until`; false when another took it first. */
  async claim(d: AttemptDrop, until: number): Promise<boolean> {
    const { affected } = await this.sql.exec(
      undefined,
      'UPDATE baton_task_attempt SET drop_due_at = ? WHERE id = ? AND drop_due_at = ?',
      [until, d.id, d.dueAt],
    );
    return affected === 1;
  }

  /** The worker dropped the attempt (or cannot hold it any more). */
  async done(d: AttemptDrop, now: number): Promise<void> {
    await this.sql.exec(
      undefined,
      'UPDATE baton_task_attempt SET drop_due_at = NULL, dropped_at = ?, drop_tries = ? WHERE id = ?',
      [now, d.tries + 1, d.id],
    );
  }

  /** The worker could not be told: again at `due`. */
  async later(d: AttemptDrop, due: number): Promise<void> {
    await this.sql.exec(
      undefined,
      'UPDATE baton_task_attempt SET drop_due_at = ?, drop_tries = ? WHERE id = ?',
      [due, d.tries + 1, d.id],
    );
  }

  /** Drops still owed (for health and metrics). */
  async pending(): Promise<number> {
    const { records } = await this.sql.exec(
      undefined,
      'SELECT COUNT(*) AS n FROM baton_task_attempt WHERE drop_due_at IS NOT NULL',
      [],
    );
    return Number((records as { n: unknown }[])[0]?.n ?? 0);
  }
}
