import { Injectable } from '@nestjs/common';
import { TaskOutcome, TaskStatus } from '@baton/task-contract';
import { DataSource, EntityManager, In } from 'typeorm';
import { SqlRunner } from './sql-runner';
import { NewTaskStatusChange, TaskChangeFeed } from './task-change-feed';
import { TaskAttemptEntity } from './task-attempt.entity';
import { OPEN_ATTEMPT, TaskChange, statusPath } from './task-change';
import { TaskEventEntity } from './task-event.entity';
import { clip, eventModel } from './task-row.mapping';
import { TaskAttemptModel, TaskEventModel, TaskModel } from './task.model';

/** A change that won its compare-and-set, with the task after it. */
export interface WonChange {
  task: TaskModel;
  change: TaskChange;
  now: number;
  next: TaskModel;
}

/** An attempt row to close. */
interface AttemptEnd {
  taskId: string;
  attempt: number;
  at: number;
  outcome: TaskStatus;
  error: string | null;
  /** Its worker is to be told to drop it. */
  drop: boolean;
}

/** A move of a task as the change feed tells it. */
function statusChange(
  t: TaskModel,
  from: TaskStatus | null,
  to: TaskStatus,
  at: number,
  reason: string,
  step = 0,
  fromOutcome: TaskOutcome | null = null,
): NewTaskStatusChange {
  return {
    fromOutcome,
    task: t,
    reason,
    order: t.version * 16 + Math.min(step, 15),
    taskId: t.taskId,
    taskType: t.taskType,
    tenant: t.tenant,
    from,
    to,
    outcome: t.outcome,
    attempt: t.attempt,
    at,
  };
}

/** Most attempt rows closed in one statement. */
const MAX_CLOSE = 128;

/**
 * The lifecycle log (one event per status move, who and why) and the attempts (one row per run
 * of a task on a worker, with the fence it was driven with). Written only inside the transaction
 * of the change they record (`record`), so the log never says what the row does not; the status
 * moves go to TaskChangeFeed's outbox in the same transaction.
 */
@Injectable()
export class TaskLogRepository {
  constructor(
    private readonly db: DataSource,
    private readonly sql: SqlRunner,
    private readonly feed: TaskChangeFeed,
  ) {}

  async events(taskId: string): Promise<TaskEventModel[]> {
    const rows = await this.db.manager.find(TaskEventEntity, {
      where: { task_id: taskId },
      order: { id: 'ASC' },
    });
    return rows.map(eventModel);
  }

  async attempts(taskId: string): Promise<TaskAttemptModel[]> {
    return this.attemptsOf([taskId]);
  }

  /** The attempts of several tasks, by task then attempt. */
  async attemptsOf(taskIds: readonly string[]): Promise<TaskAttemptModel[]> {
    if (taskIds.length === 0) return [];
    const rows: TaskAttemptEntity[] = [];
    for (let i = 0; i < taskIds.length; i += 500)
      rows.push(
        ...(await this.db.manager.find(TaskAttemptEntity, {
          where: { task_id: In(taskIds.slice(i, i + 500)) },
          order: { task_id: 'ASC', attempt: 'ASC' },
        })),
      );
    return rows.map((a) => ({
      taskId: a.task_id,
      attempt: a.attempt,
      workerId: a.worker_id,
      workerUrl: a.worker_url,
      fence: a.fence,
      startedAt: a.started_at,
      endedAt: a.ended_at,
      outcome: a.outcome as TaskStatus | null,
      error: a.error,
      drop: a.drop_due_at !== null ? 'pending' : a.dropped_at !== null ? 'done' : null,
      droppedAt: a.dropped_at,
    }));
  }

  /** The fence the attempt was created with on its worker; undefined when there is no such attempt. */
  async attemptFence(taskId: string, attempt: number): Promise<number | undefined> {
    const row = await this.db.manager.findOne(TaskAttemptEntity, {
      where: { task_id: taskId, attempt },
      select: ['fence'],
    });
    return row?.fence;
  }

  /**
   * The log of changes that won, in the transaction that wrote them: their events (in arrival
   * order, so two changes of one task log in the order they were made), the attempts they open,
   * and the attempts they end.
   */
  async record(m: EntityManager, won: readonly WonChange[]): Promise<void> {
    const events: Record<string, unknown>[] = [];
    const started: Record<string, unknown>[] = [];
    const changes: NewTaskStatusChange[] = [];
    for (const { task, change, now, next } of won) {
      const path = statusPath(task.status, change);
      if (path.length === 1 && change.repeatOf !== undefined) {
        // The same wait found again: its row counts one more (a row of its own if it is gone).
        if (!(await this.repeat(m, task.taskId, change.repeatOf, now)))
          events.push(
            this.event(
              task.taskId,
              task.status,
              task.status,
              change.reason,
              change.actor,
              next.attempt,
              now,
            ),
          );
      } else if (path.length > 1 || change.note) {
        const moves: [TaskStatus, TaskStatus][] =
          path.length > 1
            ? path.slice(1).map((to, k) => [path[k], to])
            : [[task.status, task.status]];
        for (const [k, [from, to]] of moves.entries()) {
          events.push(
            this.event(task.taskId, from, to, change.reason, change.actor, next.attempt, now),
          );
          // A note (no move) is in the log only; a move is a status change for the feed too.
          if (path.length > 1)
            changes.push(
              statusChange(next, from, to, now, change.reason, k, k === 0 ? task.outcome : null),
            );
        }
      }
      // The attempt's row is written with the move that starts or ends it: one commit, not two.
      const a = change.attemptStart;
      if (a && a.attempt !== task.attempt)
        started.push({
          task_id: task.taskId,
          attempt: a.attempt,
          worker_id: a.workerId,
          worker_url: a.workerUrl,
          fence: a.fence,
          started_at: a.startedAt,
        });
      else if (a) await this.redriveAttempt(m, task.taskId, a);
    }
    await this.sql.insertRows(m, 'baton_task_event', events);
    await this.feed.write(m, changes);
    await this.sql.insertRows(m, 'baton_task_attempt', started);
    await this.endAttempts(
      m,
      won.flatMap((w) => this.attemptEnd(w)),
    );
  }

  /** The first events of new tasks (from nothing to their first status). */
  async created(
    m: EntityManager,
    tasks: readonly TaskModel[],
    reason: string,
    actor: string,
  ): Promise<void> {
    await this.sql.insertRows(
      m,
      'baton_task_event',
      tasks.map((t) => this.event(t.taskId, null, t.status, reason, actor, t.attempt, t.createdAt)),
    );
    await this.feed.write(
      m,
      tasks.map((t) => statusChange(t, null, t.status, t.createdAt, reason)),
    );
  }

  /** One event that moves no status (a request or report noted beside a driver). */
  async note(
    m: EntityManager,
    taskId: string,
    status: TaskStatus,
    reason: string,
    actor: string,
    attempt: number,
    at: number,
  ): Promise<void> {
    await this.sql.insertRows(m, 'baton_task_event', [
      this.event(taskId, status, status, reason, actor, attempt, at),
    ]);
  }

  /**
   * One more check of the wait told as `why`: the task's latest row counts it (and its time) when
   * it tells that wait. False when it does not (another row came between, or none is left).
   */
  private async repeat(
    m: EntityManager,
    taskId: string,
    why: string,
    at: number,
  ): Promise<boolean> {
    const res = await this.sql.exec(
      m,
      'UPDATE baton_task_event SET repeats = repeats + 1, last_at = ? WHERE id = (SELECT id FROM (SELECT MAX(id) AS id FROM baton_task_event WHERE task_id = ?) AS latest) AND reason IN (?, ?)',
      [at, taskId, clip(why, 1000), clip(`waiting: ${why}`, 1000)],
    );
    return res.affected === 1;
  }

  private event(
    taskId: string,
    from: TaskStatus | null,
    to: TaskStatus,
    reason: string,
    actor: string,
    attempt: number,
    at: number,
  ): Record<string, unknown> {
    return {
      task_id: taskId,
      from_status: from,
      to_status: to,
      reason: clip(reason, 1000),
      actor,
      attempt,
      created_at: at,
    };
  }

  /**
   * An attempt ends exactly when the task leaves a status in which one is under way: derived
   * here for every change, so no caller can forget it or close an attempt that already ended.
   */
  private attemptEnd({ task, change, now, next }: WonChange): AttemptEnd[] {
    if (!OPEN_ATTEMPT.has(task.status) || OPEN_ATTEMPT.has(next.status)) return [];
    const outcome = change.attemptEnd?.outcome ?? next.status;
    const error =
      change.attemptEnd !== undefined
        ? change.attemptEnd.error
        : outcome === TaskStatus.FAIL || outcome === TaskStatus.NONE
          ? change.reason
          : null;
    return [
      {
        taskId: task.taskId,
        attempt: task.attempt,
        at: now,
        outcome,
        error: error && clip(error, 2000),
        drop: change.attemptEnd?.drop === true,
      },
    ];
  }

  /** Closes attempt rows: one statement for the group (each task's row once). */
  private async endAttempts(m: EntityManager, ended: readonly AttemptEnd[]): Promise<void> {
    if (ended.length === 0) return;
    // Rare (an attempt given up on): one statement each, in the transaction that ends it.
    for (const e of ended.filter((x) => x.drop))
      await this.sql.exec(
        m,
        'UPDATE baton_task_attempt SET drop_due_at = ? WHERE task_id = ? AND attempt = ? AND worker_url IS NOT NULL',
        [e.at, e.taskId, e.attempt],
      );
    if (ended.length === 1 || new Set(ended.map((e) => e.taskId)).size !== ended.length) {
      for (const e of ended)
        await this.sql.exec(
          m,
          'UPDATE baton_task_attempt SET ended_at = ?, outcome = ?, error = ? WHERE task_id = ? AND attempt = ?',
          [e.at, e.outcome, e.error, e.taskId, e.attempt],
        );
      return;
    }
    for (let i = 0; i < ended.length; i += MAX_CLOSE) {
      const part = ended.slice(i, i + MAX_CLOSE);
      const cases = part.map(() => 'WHEN ? THEN ?').join(' ');
      const column = (pick: (e: AttemptEnd) => unknown): unknown[] =>
        part.flatMap((e) => [e.taskId, pick(e)]);
      await this.sql.exec(
        m,
        `UPDATE baton_task_attempt SET ended_at = CASE task_id ${cases} END, outcome = CASE task_id ${cases} END, error = CASE task_id ${cases} END WHERE ${part.map(() => '(task_id = ? AND attempt = ?)').join(' OR ')}`,
        [
          ...column((e) => e.at),
          ...column((e) => e.outcome),
          ...column((e) => e.error),
          ...part.flatMap((e) => [e.taskId, e.attempt]),
        ],
      );
    }
  }

  /** A re-drive of the same attempt (after a crash): its row may exist already. */
  private async redriveAttempt(
    m: EntityManager,
    taskId: string,
    a: NonNullable<TaskChange['attemptStart']>,
  ): Promise<void> {
    const existing = await m.findOne(TaskAttemptEntity, {
      where: { task_id: taskId, attempt: a.attempt },
      select: ['id'],
    });
    if (existing)
      await m.update(
        TaskAttemptEntity,
        { task_id: taskId, attempt: a.attempt },
        { worker_id: a.workerId, worker_url: a.workerUrl, fence: a.fence },
      );
    else
      await m.insert(TaskAttemptEntity, {
        task_id: taskId,
        attempt: a.attempt,
        worker_id: a.workerId,
        worker_url: a.workerUrl,
        fence: a.fence,
        started_at: a.startedAt,
      });
  }
}
