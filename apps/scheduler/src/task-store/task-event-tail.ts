import { Injectable } from '@nestjs/common';
import { TaskOutcome, TaskStatus } from '@baton/task-contract';
import { SqlRunner } from './sql-runner';

/** One line of the lifecycle log with what a reader filters on (the task's tenant, type, run). */
export interface TailedTaskEvent {
  id: number;
  taskId: string;
  taskType: string;
  tenant: string;
  controlTaskId: string | null;
  from: TaskStatus | null;
  to: TaskStatus;
  /** The task's outcome now (not at the event): set once it finished. */
  outcome: TaskOutcome | null;
  reason: string;
  actor: string;
  attempt: number;
  at: number;
}

const COLUMNS = `e.id, e.task_id, e.from_status, e.to_status, e.reason, e.actor, e.attempt, e.created_at,
  t.task_type, t.tenant, t.control_task_id, t.outcome`;

/**
 * Reads the lifecycle log (baton_task_event) by its id, for live views: every transition and note
 * of every task, joined to its task for the tenant, type and run. The id grows with each insert
 * but is not a commit order (a transaction that took a lower id may commit after one that took a
 * higher), so a reader that goes by ids must look again for the ids it skipped (TaskChangeStream).
 * An event of a task purged since has no task and is left out.
 */
@Injectable()
export class TaskEventTail {
  constructor(private readonly sql: SqlRunner) {}

  /** The highest event id written so far (0 when there is none). */
  async latestId(): Promise<number> {
    const { records } = await this.sql.exec(
      undefined,
      'SELECT MAX(id) AS id FROM baton_task_event',
      [],
    );
    const id = (records[0] as { id: unknown } | undefined)?.id;
    return id === null || id === undefined ? 0 : Number(id);
  }

  /** Events after `after`, lowest id first, at most `limit`. */
  async after(after: number, limit: number): Promise<TailedTaskEvent[]> {
    const { records } = await this.sql.exec(
      undefined,
      `SELECT ${COLUMNS} FROM baton_task_event e JOIN baton_task t ON t.task_id = e.task_id
       WHERE e.id > ? ORDER BY e.id LIMIT ${Math.floor(limit)}`,
      [after],
    );
    return (records as Record<string, unknown>[]).map(toEvent);
  }

  /** The events with these ids that exist now (ids skipped earlier whose transactions committed since). */
  async withIds(ids: readonly number[]): Promise<TailedTaskEvent[]> {
    if (ids.length === 0) return [];
    const { records } = await this.sql.exec(
      undefined,
      `SELECT ${COLUMNS} FROM baton_task_event e JOIN baton_task t ON t.task_id = e.task_id
       WHERE e.id IN (${ids.map(() => '?').join(', ')}) ORDER BY e.id`,
      [...ids],
    );
    return (records as Record<string, unknown>[]).map(toEvent);
  }
}

function toEvent(r: Record<string, unknown>): TailedTaskEvent {
  return {
    id: Number(r.id),
    taskId: r.task_id as string,
    taskType: r.task_type as string,
    tenant: r.tenant as string,
    controlTaskId: (r.control_task_id as string | null) ?? null,
    from: (r.from_status as TaskStatus | null) ?? null,
    to: r.to_status as TaskStatus,
    outcome: (r.outcome as TaskOutcome | null) ?? null,
    reason: r.reason as string,
    actor: r.actor as string,
    attempt: Number(r.attempt),
    at: Number(r.created_at),
  };
}
