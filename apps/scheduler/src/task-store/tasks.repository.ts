import { Injectable } from '@nestjs/common';
import { ContractErrorCode, ContractException, TaskStatus } from '@baton/task-contract';
import { Brackets, DataSource, EntityManager, In, Not } from 'typeorm';
import { TransactionRunner } from '../database';
import { GroupCommitWriter } from './group-commit.writer';
import { isUniqueViolation, SqlRunner } from './sql-runner';
import { TaskChange } from './task-change';
import { lockKeyHolder } from './lock-key-holder';
import { TaskLogRepository } from './task-log.repository';
import { entityRow, fromRow, toColumn, toEntity, toModel } from './task-row.mapping';
import { TaskEntity } from './task.entity';
import { NEWEST_FIRST, taskListQuery } from './task-list.query';
import { TaskFilter, TaskModel, TaskOrder, TaskSeek } from './task.model';

/** A task in the queue's terms. */
export interface DueTask {
  taskId: string;
  priority: number;
  dueAt: number;
  status: TaskStatus;
  tenant: string;
}

/**
 * The task rows: inserts, reads, claims, and the writes that are not transitions (heartbeats, a
 * cancel noted beside a driver). Every transition goes through `apply`, a compare-and-set on
 * (task_id, version) written with its lifecycle event in one transaction: a change that lost a
 * race returns undefined and writes nothing.
 */
@Injectable()
export class TasksRepository {
  constructor(
    private readonly db: DataSource,
    private readonly tx: TransactionRunner,
    private readonly sql: SqlRunner,
    private readonly writer: GroupCommitWriter,
    private readonly log: TaskLogRepository,
  ) {}

  /** Inserts a new task with its INIT event. Throws CREATE_CONFLICT on a taken idempotency key. */
  async insert(task: TaskModel, reason: string, actor: string): Promise<TaskModel> {
    try {
      await this.tx.run((m) => this.insertTasks(m, [task], reason, actor));
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw new ContractException(
          ContractErrorCode.CREATE_CONFLICT,
          'a task with this idempotency key or id exists',
          { idempotency_key: task.idempotencyKey },
        );
      }
      throw err;
    }
    return task;
  }

  /** Inserts tasks with their first events in one transaction: all or none. */
  async insertMany(tasks: readonly TaskModel[], reason: string, actor: string): Promise<void> {
    try {
      await this.tx.run((m) => this.insertTasks(m, tasks, reason, actor));
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw new ContractException(
          ContractErrorCode.CREATE_CONFLICT,
          'a task of the batch has an idempotency key that is taken',
        );
      }
      throw err;
    }
  }

  /**
   * Inserts tasks in the caller's transaction (a module that writes its own rows with them); the
   * change feed's listeners are told when it commits.
   */
  insertWithin(
    m: EntityManager,
    tasks: readonly TaskModel[],
    reason: string,
    actor: string,
  ): Promise<void> {
    return this.insertTasks(m, tasks, reason, actor);
  }

  /** Tasks, their labels and first events as plain multi-row INSERTs (the ORM's insert builder cost more than the rows). */
  private async insertTasks(
    m: EntityManager,
    tasks: readonly TaskModel[],
    reason: string,
    actor: string,
  ): Promise<void> {
    await this.sql.insertRows(
      m,
      'baton_task',
      tasks.map((t) => entityRow(toEntity(t))),
    );
    const labels = tasks.flatMap((t) =>
      Object.entries(t.labels).map(([label_key, label_value]) => ({
        task_id: t.taskId,
        label_key,
        label_value,
      })),
    );
    if (labels.length) await this.sql.insertRows(m, 'baton_task_label', labels);
    await this.log.created(m, tasks, reason, actor);
  }

  /** The hot path's read: plain SQL, no query builder (see `fromRow`). */
  async findById(taskId: string): Promise<TaskModel | undefined> {
    const { records } = await this.sql.exec(
      undefined,
      'SELECT * FROM baton_task WHERE task_id = ?',
      [taskId],
    );
    const row = records[0] as Record<string, unknown> | undefined;
    return row ? toModel(fromRow(row)) : undefined;
  }

  /** The tenant of a task (what a tenant-scoped API key may reach), undefined if there is none. */
  async tenantOf(taskId: string): Promise<string | undefined> {
    const { records } = await this.sql.exec(
      undefined,
      'SELECT tenant FROM baton_task WHERE task_id = ?',
      [taskId],
    );
    return (records[0] as { tenant: string } | undefined)?.tenant;
  }

  /**
   * Claims, in one statement, every listed task that is drivable, due by `dueBy` and not held by
   * another owner's live claim: owner, lease and a new fence (a compare-and-set on the row's
   * state, not on a version read before). Returns the claimed rows; the others are left alone.
   */
  async claimMany(
    taskIds: readonly string[],
    owner: string,
    now: number,
    leaseUntil: number,
    statuses: readonly TaskStatus[],
    dueBy = now,
  ): Promise<TaskModel[]> {
    if (taskIds.length === 0) return [];
    const ids = taskIds.map(() => '?').join(', ');
    const st = statuses.map(() => '?').join(', ');
    return this.tx.run(async (m) => {
      await this.sql.exec(
        m,
        `UPDATE baton_task SET owner = ?, lease_until = ?, fence = fence + 1, version = version + 1, updated_at = ?
         WHERE task_id IN (${ids}) AND status IN (${st}) AND due_at IS NOT NULL AND due_at <= ?
           AND (owner IS NULL OR owner = ? OR lease_until IS NULL OR lease_until < ?)`,
        [owner, leaseUntil, now, ...taskIds, ...statuses, dueBy, owner, now],
      );
      // This claim's rows: ours, with this lease (a live claim of ours is never in `taskIds`).
      const { records } = await this.sql.exec(
        m,
        `SELECT * FROM baton_task WHERE task_id IN (${ids}) AND owner = ? AND lease_until = ?`,
        [...taskIds, owner, leaseUntil],
      );
      return (records as Record<string, unknown>[]).map((r) => toModel(fromRow(r)));
    });
  }

  /** The tasks of these ids that exist (in the caller's transaction when given one). */
  /** Plain SQL, as findById: a topology evaluation reads a thousand node tasks at a time. */
  async findByIds(taskIds: readonly string[], m?: EntityManager): Promise<TaskModel[]> {
    return (await this.sql.selectIn(m, 'baton_task', '*', 'task_id', taskIds)).map((row) =>
      toModel(fromRow(row)),
    );
  }

  /**
   * Some columns of these tasks, with `task_id`, as plain rows: a cheap look at many tasks (their
   * versions, their centre tasks). `columns` are column names from the code, never from input.
   */
  columnsOf(
    taskIds: readonly string[],
    columns: readonly string[],
    m?: EntityManager,
  ): Promise<Record<string, unknown>[]> {
    const list = ['task_id', ...columns].join(', ');
    return this.sql.selectIn(m, 'baton_task', list, 'task_id', taskIds);
  }

  async findByIdempotencyKey(tenant: string, key: string): Promise<TaskModel | undefined> {
    // Plain SQL: every timer fire asks this first.
    const { records } = await this.sql.exec(
      undefined,
      'SELECT * FROM baton_task WHERE tenant = ? AND idempotency_key = ?',
      [tenant, key],
    );
    const row = records[0] as Record<string, unknown> | undefined;
    return row ? toModel(fromRow(row)) : undefined;
  }

  /** The tasks holding any of these (tenant, key) pairs, keyed `tenant/key`. */
  async findByIdempotencyKeys(
    pairs: readonly { tenant: string; key: string }[],
  ): Promise<Map<string, TaskModel>> {
    const found = new Map<string, TaskModel>();
    for (let i = 0; i < pairs.length; i += 500) {
      const part = pairs.slice(i, i + 500);
      const { records } = await this.sql.exec(
        undefined,
        `SELECT * FROM baton_task WHERE ${part.map(() => '(tenant = ? AND idempotency_key = ?)').join(' OR ')}`,
        part.flatMap((p) => [p.tenant, p.key]),
      );
      for (const row of records as Record<string, unknown>[]) {
        const t = toModel(fromRow(row));
        found.set(`${t.tenant}/${t.idempotencyKey}`, t);
      }
    }
    return found;
  }

  /**
   * A page of tasks in `order` (newest first unless asked), after `after` (a task id: the last of
   * the previous page newest first).
   */
  async list(
    filter: TaskFilter,
    after: TaskSeek | string | undefined,
    limit: number,
    order: TaskOrder = NEWEST_FIRST,
  ): Promise<TaskModel[]> {
    const seek = typeof after === 'string' ? { taskId: after } : after;
    const rows = await taskListQuery(this.db, filter, seek, limit, order).getMany();
    return rows.map(toModel);
  }

  /**
   * Applies a change if the task is still at `task.version` (the group-commit writer): the task
   * after it, or undefined when someone else changed it first.
   */
  apply(task: TaskModel, change: TaskChange, now: number): Promise<TaskModel | undefined> {
    return this.writer.apply(task, change, now);
  }

  /** Tasks due by `upTo` (default now) that nobody holds a live claim on, earliest first. */
  async due(
    now: number,
    statuses: readonly TaskStatus[],
    limit: number,
    upTo = now,
  ): Promise<DueTask[]> {
    const rows = await this.db.manager
      .createQueryBuilder(TaskEntity, 't')
      .select(['t.task_id', 't.priority', 't.due_at', 't.status', 't.tenant'])
      .where('t.due_at <= :upTo', { upTo })
      .andWhere('t.status IN (:...statuses)', { statuses })
      .andWhere(
        new Brackets((b) => b.where('t.owner IS NULL').orWhere('t.lease_until < :now', { now })),
      )
      .orderBy('t.due_at', 'ASC')
      .limit(limit)
      .getMany();
    return rows.map((r) => ({
      taskId: r.task_id,
      priority: r.priority,
      dueAt: r.due_at as number,
      status: r.status as TaskStatus,
      tenant: r.tenant,
    }));
  }

  /**
   * A worker's heartbeat (and progress) for the current attempt of a running or paused task.
   * Not a transition: the version does not move. False when the task is no longer there.
   */
  async recordBeat(
    taskId: string,
    attempt: number,
    at: number,
    progress?: TaskModel['progress'],
  ): Promise<boolean> {
    const set = progress
      ? 'heartbeat_at = ?, progress = ?, updated_at = ?'
      : 'heartbeat_at = ?, updated_at = ?';
    const values = progress ? [at, toColumn('progress', progress), at] : [at, at];
    const res = await this.tx.single((m) =>
      this.sql.exec(
        m,
        `UPDATE baton_task SET ${set} WHERE task_id = ? AND attempt = ? AND status IN (?, ?)`,
        [...values, taskId, attempt, TaskStatus.RUNNING, TaskStatus.PAUSE],
      ),
    );
    return res.affected === 1;
  }

  /**
   * A cancel of a RUNNING task, which a runner may be driving right now (a sync run holds its
   * claim for the whole run). Not a transition: the version does not move, so a driver's next
   * compare-and-set still holds, and it reads the flag before it plans a retry or a next life.
   * Applies while the task is RUNNING `attempt`, whatever claims have been taken of it since it
   * was read (every status poll takes one, with a new fence: the run is the attempt, the fence
   * only its latest claim). Logged as a note once: `already` when this run's cancel was recorded
   * before, `changed` when the run has ended meanwhile. `fence` is the run's fence as this
   * transaction saw it: the one to tell the worker.
   */
  async requestCancel(
    taskId: string,
    attempt: number,
    actor: string,
    reason: string,
    now: number,
  ): Promise<{ outcome: 'recorded' | 'already' | 'changed'; fence?: number }> {
    return this.tx.run(async (m) => {
      const res = await this.sql.exec(
        m,
        'UPDATE baton_task SET cancel_requested = 1, updated_at = ? WHERE task_id = ? AND status = ? AND attempt = ? AND cancel_requested = 0',
        [now, taskId, TaskStatus.RUNNING, attempt],
      );
      if (res.affected === 1) {
        await this.log.note(m, taskId, TaskStatus.RUNNING, reason, actor, attempt, now);
      }
      // The fence now (and, when nothing was written, whether this run was asked before: one
      // event for all the askings).
      const { records } = await this.sql.exec(
        m,
        'SELECT fence FROM baton_task WHERE task_id = ? AND status = ? AND attempt = ? AND cancel_requested = 1',
        [taskId, TaskStatus.RUNNING, attempt],
      );
      const row = records[0] as { fence: number | string } | undefined;
      if (!row) return { outcome: 'changed' };
      return { outcome: res.affected === 1 ? 'recorded' : 'already', fence: Number(row.fence) };
    });
  }

  /** An event that moves nothing, beside whatever status the task is in; false when no such task. */
  async note(
    taskId: string,
    reason: string,
    actor: string,
    attempt: number,
    now: number,
  ): Promise<boolean> {
    return this.tx.run(async (m) => {
      const { records } = await this.sql.exec(
        m,
        'SELECT status FROM baton_task WHERE task_id = ?',
        [taskId],
      );
      const row = records[0] as { status?: string } | undefined;
      if (!row?.status) return false;
      await this.log.note(m, taskId, row.status as TaskStatus, reason, actor, attempt, now);
      return true;
    });
  }

  /** Whether a cancel was asked for (read fresh: see `requestCancel`). */
  async cancelRequested(taskId: string): Promise<boolean> {
    const { records } = await this.sql.exec(
      undefined,
      'SELECT cancel_requested FROM baton_task WHERE task_id = ?',
      [taskId],
    );
    const row = records[0] as { cancel_requested?: unknown } | undefined;
    return Boolean(Number(row?.cancel_requested ?? 0));
  }

  /**
   * Another task that holds one of `keys` by its state, or (with `liveSince`) by a drop a live
   * worker is still owed (`lockKeyHolder` of lock-key-holder.ts).
   */
  lockKeyHolder(
    keys: readonly string[],
    exceptTaskId: string,
    liveSince?: number,
  ): Promise<string | undefined> {
    return lockKeyHolder(this.db, keys, exceptTaskId, liveSince);
  }

  /** Tasks of a type in these statuses (concurrency limits). */
  /**
   * Tasks of a type or a tenant that hold a worker now (bound to it in CREATE or PREPARE, or
   * RUNNING), over the fleet, `exclude` aside: what a concurrency limit counts.
   */
  async countStarted(
    of: { taskType: string } | { tenant: string },
    exclude: string,
  ): Promise<number> {
    return this.db.manager.countBy(TaskEntity, {
      ...('taskType' in of ? { task_type: of.taskType } : { tenant: of.tenant }),
      status: In([TaskStatus.CREATE, TaskStatus.PREPARE, TaskStatus.RUNNING]),
      task_id: Not(exclude),
    });
  }
}
