import { Injectable, Optional } from '@nestjs/common';
import { Metrics } from '../metrics';
import {
  BlockingKind,
  ContractErrorCode,
  ContractException,
  RepetitionKind,
  TaskStatus,
  assertTransition,
} from '@baton/task-contract';
import { Brackets, DataSource, EntityManager, In, QueryFailedError } from 'typeorm';
import { TransactionRunner } from '../database';
import { TaskAttemptEntity } from './task-attempt.entity';
import { TaskEventEntity } from './task-event.entity';
import { TaskEntity } from './task.entity';
import { TaskAttemptModel, TaskEventModel, TaskFilter, TaskModel, TaskPatch } from './task.model';

const PATCH_COLUMNS: Readonly<Record<keyof TaskPatch, keyof TaskEntity>> = {
  attempt: 'attempt',
  params: 'params',
  workerId: 'worker_id',
  workerUrl: 'worker_url',
  dueAt: 'due_at',
  owner: 'owner',
  leaseUntil: 'lease_until',
  result: 'result',
  error: 'error',
  progress: 'progress',
  heartbeatAt: 'heartbeat_at',
  outcome: 'outcome',
  pausedFrom: 'paused_from',
  cancelRequested: 'cancel_requested',
  pendingAction: 'pending_action',
  startedAt: 'started_at',
  finishedAt: 'finished_at',
};

/** One change of a task: a new status (or none), fields, and the words for the log. */
export interface TaskChange {
  to?: TaskStatus;
  /**
   * Statuses passed through on the way to `to`, in order, each logged as its own event (one
   * write for e.g. RUNNING -> SUCCESS when a sync run answers at once).
   */
  via?: TaskStatus[];
  patch?: TaskPatch;
  reason: string;
  actor: string;
  /** Take a new fence (a new claim): fence + 1. */
  bumpFence?: boolean;
  /** Open the row of an attempt in the same transaction (idempotent for a re-drive). */
  attemptStart?: Pick<
    TaskAttemptModel,
    'attempt' | 'workerId' | 'workerUrl' | 'fence' | 'startedAt'
  >;
  /**
   * The outcome and error to record when this change ends the current attempt. Whether it ends
   * one is not the caller's call: it does when the task leaves CREATE/PREPARE/RUNNING/PAUSE.
   */
  attemptEnd?: { outcome: TaskStatus; error: string | null };
  /**
   * Log an event even when the status does not move (from = to): a request from a person or a
   * worker's report that changes what happens next (cancel requested, an alert, a wait).
   */
  note?: boolean;
}

/** A change waiting for its group's commit. */
interface PendingChange {
  task: TaskModel;
  change: TaskChange;
  now: number;
  resolve(next: TaskModel | undefined): void;
  reject(err: unknown): void;
}

/** An attempt row to close. */
interface AttemptEnd {
  taskId: string;
  attempt: number;
  at: number;
  outcome: TaskStatus;
  error: string | null;
}

/** A group's one-statement compare-and-set did not match every row: roll back, go row by row. */
class GroupRaceLost extends Error {
  constructor() {
    super('a change in the group lost its compare-and-set');
  }
}

/** Largest JSON content (results, errors, progress) of a group written as one UPDATE. */
const ONE_STATEMENT_MAX_BYTES = 1_000_000;

/** Most changes in one group commit. */
const MAX_GROUP = 128;
/** Group writers at once on MySQL (each holds one pooled connection while it writes). */
const MYSQL_WRITERS = 4;

/** Statuses in which an attempt is under way (its row is open). */
const OPEN_ATTEMPT: ReadonlySet<TaskStatus> = new Set([
  TaskStatus.CREATE,
  TaskStatus.PREPARE,
  TaskStatus.RUNNING,
  TaskStatus.PAUSE,
]);

/** Statuses in which a task holds its lock keys (FAIL too, once its outcome is final). */
const HOLDING_STATUSES: ReadonlySet<TaskStatus> = new Set([
  ...OPEN_ATTEMPT,
  TaskStatus.SUCCESS,
  TaskStatus.ROLLBACK,
  TaskStatus.NONE,
]);

/** A task in the queue's terms. */
export interface DueTask {
  taskId: string;
  priority: number;
  dueAt: number;
  status: TaskStatus;
}

function toModel(e: TaskEntity): TaskModel {
  return {
    taskId: e.task_id,
    taskType: e.task_type,
    taskName: e.task_name,
    tenant: e.tenant,
    labels: e.labels ?? {},
    status: e.status as TaskStatus,
    version: e.version,
    attempt: e.attempt,
    priority: e.priority,
    blocking: e.blocking as BlockingKind,
    repetition: e.repetition as RepetitionKind,
    params: e.params ?? {},
    lockKeys: e.lock_keys ?? [],
    requestedUrl: e.requested_url,
    workerId: e.worker_id,
    workerUrl: e.worker_url,
    parentTaskId: e.parent_task_id,
    controlTaskId: e.control_task_id,
    startTime: e.start_time,
    deadlineSecond: e.deadline_second,
    lockTimeout: e.lock_timeout,
    maxRetry: e.max_retry,
    idempotencyKey: e.idempotency_key,
    callbackUrl: e.callback_url,
    dueAt: e.due_at,
    owner: e.owner,
    leaseUntil: e.lease_until,
    fence: e.fence,
    result: e.result,
    error: e.error,
    progress: e.progress,
    heartbeatAt: e.heartbeat_at,
    outcome: e.outcome as TaskStatus | null,
    pausedFrom: e.paused_from as TaskStatus | null,
    cancelRequested: Boolean(e.cancel_requested),
    pendingAction: e.pending_action as TaskModel['pendingAction'],
    createdAt: e.created_at,
    updatedAt: e.updated_at,
    startedAt: e.started_at,
    finishedAt: e.finished_at,
  };
}

function toEntity(m: TaskModel): TaskEntity {
  const e = new TaskEntity();
  Object.assign(e, {
    task_id: m.taskId,
    task_type: m.taskType,
    task_name: m.taskName,
    tenant: m.tenant,
    labels: m.labels,
    status: m.status,
    version: m.version,
    attempt: m.attempt,
    priority: m.priority,
    blocking: m.blocking,
    repetition: m.repetition,
    params: m.params,
    lock_keys: m.lockKeys,
    requested_url: m.requestedUrl,
    worker_id: m.workerId,
    worker_url: m.workerUrl,
    parent_task_id: m.parentTaskId,
    control_task_id: m.controlTaskId,
    start_time: m.startTime,
    deadline_second: m.deadlineSecond,
    lock_timeout: m.lockTimeout,
    max_retry: m.maxRetry,
    idempotency_key: m.idempotencyKey,
    callback_url: m.callbackUrl,
    due_at: m.dueAt,
    owner: m.owner,
    lease_until: m.leaseUntil,
    fence: m.fence,
    result: m.result,
    error: m.error,
    progress: m.progress,
    heartbeat_at: m.heartbeatAt,
    outcome: m.outcome,
    paused_from: m.pausedFrom,
    cancel_requested: m.cancelRequested,
    pending_action: m.pendingAction,
    created_at: m.createdAt,
    updated_at: m.updatedAt,
    started_at: m.startedAt,
    finished_at: m.finishedAt,
  } satisfies Record<keyof TaskEntity, unknown>);
  return e;
}

const eventModel = (e: TaskEventEntity): TaskEventModel => ({
  id: Number(e.id),
  taskId: e.task_id,
  from: e.from_status as TaskStatus | null,
  to: e.to_status as TaskStatus,
  reason: e.reason,
  actor: e.actor,
  attempt: e.attempt,
  at: e.created_at,
});

const JSON_COLUMNS: ReadonlySet<string> = new Set([
  'labels',
  'params',
  'lock_keys',
  'result',
  'error',
  'progress',
]);
const NUMBER_COLUMNS: ReadonlySet<string> = new Set([
  'version',
  'attempt',
  'priority',
  'start_time',
  'deadline_second',
  'lock_timeout',
  'max_retry',
  'due_at',
  'lease_until',
  'fence',
  'heartbeat_at',
  'created_at',
  'updated_at',
  'started_at',
  'finished_at',
]);

/** A raw row of baton_task (either driver) as the entity would hold it. */
function fromRow(row: Record<string, unknown>): TaskEntity {
  const e = new TaskEntity();
  for (const [k, v] of Object.entries(row)) {
    let value: unknown = v;
    if (v !== null && v !== undefined) {
      if (JSON_COLUMNS.has(k)) value = JSON.parse(String(v));
      else if (NUMBER_COLUMNS.has(k)) value = Number(v);
      else if (k === 'cancel_requested') value = Boolean(Number(v));
    }
    (e as unknown as Record<string, unknown>)[k] = value;
  }
  return e;
}

/** An entity as a plain column -> value row. */
function entityRow(e: TaskEntity): Record<string, unknown> {
  return { ...(e as unknown as Record<string, unknown>) };
}

/**
 * Most bytes of JSON kept in `result`, `error` and `progress`: what workers send is not capped,
 * and a TEXT column holds 65,535 bytes on MySQL (a longer value would fail the whole write,
 * and with it the task's every next step).
 */
export const STORED_JSON_MAX_BYTES = 60_000;
const WORKER_JSON_COLUMNS: ReadonlySet<string> = new Set(['result', 'error', 'progress']);

/** A worker's JSON over the limit, as a smaller stand-in that says so. */
function bounded(column: string, value: unknown, json: string): string {
  const bytes = Buffer.byteLength(json);
  if (bytes <= STORED_JSON_MAX_BYTES) return json;
  const v = value as Record<string, unknown>;
  const text = (x: unknown): string | null => (typeof x === 'string' ? clip(x, 2000) : null);
  if (column === 'error')
    return JSON.stringify({
      message: text(v.message) ?? 'error too large to keep',
      code: text(v.code),
      truncated: bytes,
    });
  if (column === 'progress')
    return JSON.stringify({
      percent: typeof v.percent === 'number' ? v.percent : null,
      step: text(v.step),
      message: text(v.message),
      truncated: bytes,
    });
  return JSON.stringify({ truncated: bytes, head: clip(json, 2000) });
}

/** A value as its column stores it (JSON as text, booleans as 0/1). */
function toColumn(column: string, value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (WORKER_JSON_COLUMNS.has(column)) return bounded(column, value, JSON.stringify(value));
  if (JSON_COLUMNS.has(column)) return JSON.stringify(value);
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

/** [from, ...via, to] without repeats of the current status; [from] when nothing moves. */
function statusPath(from: TaskStatus, change: TaskChange): TaskStatus[] {
  const path = [from];
  for (const s of [...(change.via ?? []), ...(change.to !== undefined ? [change.to] : [])]) {
    if (s !== path[path.length - 1]) path.push(s);
  }
  return path;
}

/** The columns a change sets on its task's row (version aside), and the task after it. */
interface CasRow {
  set: [string, unknown][];
  next: TaskModel;
}

/** Bytes of text (JSON) the rows would send. */
const setBytes = (rows: readonly CasRow[]): number =>
  rows.reduce(
    (n, r) => n + r.set.reduce((k, [, v]) => k + (typeof v === 'string' ? v.length : 0), 0),
    0,
  );

function casRow(task: TaskModel, change: TaskChange, now: number): CasRow {
  const set: [string, unknown][] = [['updated_at', now]];
  const next: TaskModel = { ...task, ...change.patch, version: task.version + 1, updatedAt: now };
  for (const [field, value] of Object.entries(change.patch ?? {}) as [keyof TaskPatch, unknown][])
    set.push([PATCH_COLUMNS[field], toColumn(PATCH_COLUMNS[field], value)]);
  const path = statusPath(task.status, change);
  if (path.length > 1) {
    set.push(['status', path[path.length - 1]]);
    next.status = path[path.length - 1];
  }
  if (change.bumpFence) {
    set.push(['fence', task.fence + 1]);
    next.fence = task.fence + 1;
  }
  return { set, next };
}

const clip = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** The database cannot be reached (as opposed to one statement failing). */
function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; driverError?: { code?: string }; fatal?: boolean };
  const code = e?.driverError?.code ?? e?.code ?? '';
  return (
    e?.fatal === true ||
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EPIPE',
      'PROTOCOL_CONNECTION_LOST',
      'ER_CON_COUNT_ERROR',
      'POOL_CLOSED',
    ].includes(code)
  );
}

function isUniqueViolation(err: unknown): boolean {
  if (!(err instanceof QueryFailedError)) return false;
  const driverError = (
    err as QueryFailedError & { driverError?: { code?: string; errno?: number } }
  ).driverError;
  return (
    driverError?.code === 'ER_DUP_ENTRY' ||
    driverError?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    driverError?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}

/**
 * Every read and write of tasks. Each change is a compare-and-set on (task_id, version) written
 * together with its lifecycle event in one transaction (ARCHITECTURE.md §3): a change that lost
 * a race returns undefined and writes nothing.
 */
@Injectable()
export class TasksRepository {
  /** Changes waiting for a writer (group commit, see `apply`). */
  private readonly pending: PendingChange[] = [];
  private writers = 0;
  /** Writers at once: SQLite has one connection; MySQL overlaps a few groups. */
  private readonly maxWriters: number;

  constructor(
    private readonly db: DataSource,
    private readonly tx: TransactionRunner,
    /** Counts groups whose one-statement compare-and-set missed a row (written again row by row). */
    @Optional() private readonly metrics: Metrics = new Metrics(),
  ) {
    this.maxWriters = db.options.type === 'better-sqlite3' ? 1 : MYSQL_WRITERS;
  }

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

  /** Tasks, their labels and first events as plain multi-row INSERTs (the ORM's insert builder cost more than the rows). */
  private async insertTasks(
    m: EntityManager,
    tasks: readonly TaskModel[],
    reason: string,
    actor: string,
  ): Promise<void> {
    await this.insertRows(
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
    if (labels.length) await this.insertRows(m, 'baton_task_label', labels);
    const why = clip(reason, 1000);
    await this.insertRows(
      m,
      'baton_task_event',
      tasks.map((t) => ({
        task_id: t.taskId,
        from_status: null,
        to_status: t.status,
        reason: why,
        actor,
        attempt: t.attempt,
        created_at: t.createdAt,
      })),
    );
  }

  /** The hot path's read: plain SQL, no query builder (see `fromRow`). */
  async findById(taskId: string): Promise<TaskModel | undefined> {
    const { records } = await this.exec(undefined, 'SELECT * FROM baton_task WHERE task_id = ?', [
      taskId,
    ]);
    const row = records[0] as Record<string, unknown> | undefined;
    return row ? toModel(fromRow(row)) : undefined;
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
      await this.exec(
        m,
        `UPDATE baton_task SET owner = ?, lease_until = ?, fence = fence + 1, version = version + 1, updated_at = ?
         WHERE task_id IN (${ids}) AND status IN (${st}) AND due_at IS NOT NULL AND due_at <= ?
           AND (owner IS NULL OR owner = ? OR lease_until IS NULL OR lease_until < ?)`,
        [owner, leaseUntil, now, ...taskIds, ...statuses, dueBy, owner, now],
      );
      // This claim's rows: ours, with this lease (a live claim of ours is never in `taskIds`).
      const { records } = await this.exec(
        m,
        `SELECT * FROM baton_task WHERE task_id IN (${ids}) AND owner = ? AND lease_until = ?`,
        [...taskIds, owner, leaseUntil],
      );
      return (records as Record<string, unknown>[]).map((r) => toModel(fromRow(r)));
    });
  }

  async findByIds(taskIds: readonly string[]): Promise<TaskModel[]> {
    if (taskIds.length === 0) return [];
    const rows = await this.db.manager.findBy(TaskEntity, { task_id: In([...taskIds]) });
    return rows.map(toModel);
  }

  async findByIdempotencyKey(tenant: string, key: string): Promise<TaskModel | undefined> {
    // Plain SQL: every timer fire asks this first.
    const { records } = await this.exec(
      undefined,
      'SELECT * FROM baton_task WHERE tenant = ? AND idempotency_key = ?',
      [tenant, key],
    );
    const row = records[0] as Record<string, unknown> | undefined;
    return row ? toModel(fromRow(row)) : undefined;
  }

  /** Newest first; `before` is the last task_id of the previous page (ids are time-ordered). */
  async list(filter: TaskFilter, before: string | undefined, limit: number): Promise<TaskModel[]> {
    const q = this.db.manager.createQueryBuilder(TaskEntity, 't');
    if (filter.taskType) q.andWhere('t.task_type = :type', { type: filter.taskType });
    if (filter.status?.length) q.andWhere('t.status IN (:...status)', { status: filter.status });
    if (filter.tenant) q.andWhere('t.tenant = :tenant', { tenant: filter.tenant });
    if (filter.createdFrom !== undefined)
      q.andWhere('t.created_at >= :from', { from: filter.createdFrom });
    if (filter.createdTo !== undefined) q.andWhere('t.created_at < :to', { to: filter.createdTo });
    if (filter.label) {
      q.andWhere(
        'EXISTS (SELECT 1 FROM baton_task_label l WHERE l.task_id = t.task_id AND l.label_key = :lk AND l.label_value = :lv)',
        { lk: filter.label.key, lv: filter.label.value },
      );
    }
    if (before) q.andWhere('t.task_id < :before', { before });
    const rows = await q.orderBy('t.task_id', 'DESC').limit(limit).getMany();
    return rows.map(toModel);
  }

  async events(taskId: string): Promise<TaskEventModel[]> {
    const rows = await this.db.manager.find(TaskEventEntity, {
      where: { task_id: taskId },
      order: { id: 'ASC' },
    });
    return rows.map(eventModel);
  }

  async attempts(taskId: string): Promise<TaskAttemptModel[]> {
    const rows = await this.db.manager.find(TaskAttemptEntity, {
      where: { task_id: taskId },
      order: { attempt: 'ASC' },
    });
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
    }));
  }

  /**
   * Applies a change if the task is still at `task.version`. The status move must be allowed by
   * the transition table. Returns the task after the change, or undefined when someone else
   * changed it first (nothing written).
   *
   * Group commit: changes that arrive while earlier ones are being written go to the database
   * together, in one transaction — each still its own compare-and-set, the event and attempt rows
   * of all of them in one INSERT each, one commit (one fsync) for all. A caller's promise settles
   * only after the commit that holds its change, so no step goes on from an unwritten row.
   */
  async apply(task: TaskModel, change: TaskChange, now: number): Promise<TaskModel | undefined> {
    const path = statusPath(task.status, change);
    for (let i = 1; i < path.length; i++) assertTransition(path[i - 1], path[i]);
    return new Promise((resolve, reject) => {
      this.pending.push({ task, change, now, resolve, reject });
      this.pump();
    });
  }

  /**
   * Whether a group's row updates may go as one statement: on MySQL (a round trip saved per
   * change), when each change is of a different task (a second change of one task depends on the
   * first's outcome), and while the statement stays small (see applyMany). Not on SQLite: its one connection is shared, so a write made meanwhile outside the group
   * would be undone with it when a lost race rolls the group back.
   */
  private oneStatement(batch: readonly PendingChange[]): boolean {
    if (this.db.options.type === 'better-sqlite3') return false;
    return new Set(batch.map((b) => b.task.taskId)).size === batch.length;
  }

  /** Starts writers while there is work and a free one: alone at low load, batched under load. */
  private pump(): void {
    while (this.writers < this.maxWriters && this.pending.length > 0) {
      const batch = this.pending.splice(0, MAX_GROUP);
      this.writers++;
      void this.write(batch).finally(() => {
        this.writers--;
        this.pump();
      });
    }
  }

  private async write(batch: PendingChange[]): Promise<void> {
    if (batch.length > 1) {
      let results: (TaskModel | undefined)[] | undefined;
      try {
        try {
          results = await this.tx.run((m) => this.applyMany(m, batch, this.oneStatement(batch)));
        } catch (err) {
          if (!(err instanceof GroupRaceLost)) throw err;
          // Some change lost its race: the same group again, row by row.
          this.metrics.inc('baton_group_commit_retries_total');
          results = await this.tx.run((m) => this.applyMany(m, batch));
        }
      } catch (err) {
        // The database is gone: every change fails now, rather than each after its own timeout.
        if (isConnectionError(err)) {
          for (const p of batch) p.reject(err);
          return;
        }
        // Anything else rolled the whole group back: each change is then tried alone, so one bad
        // change (or a deadlock between groups) fails only its own caller.
      }
      if (results) {
        batch.forEach((p, i) => p.resolve(results[i]));
        return;
      }
    }
    for (const p of batch) {
      try {
        p.resolve(await this.applyAlone(p.task, p.change, p.now));
      } catch (err) {
        p.reject(err);
      }
    }
  }

  private applyAlone(
    task: TaskModel,
    change: TaskChange,
    now: number,
  ): Promise<TaskModel | undefined> {
    // A change that logs nothing and touches no attempt is one statement: no transaction needed.
    if (statusPath(task.status, change).length === 1 && !change.attemptStart && !change.note)
      return this.tx.single((m) => this.applyMany(m, [{ task, change, now }]).then((r) => r[0]));
    return this.tx.run((m) => this.applyMany(m, [{ task, change, now }]).then((r) => r[0]));
  }

  /**
   * The changes in one transaction: every compare-and-set first (in task order, so two groups
   * lock rows in the same order; `together`: as one statement, which locks through the primary
   * key in that order too), then the event rows and attempt rows of those that won.
   */
  private async applyMany(
    m: EntityManager,
    batch: readonly Pick<PendingChange, 'task' | 'change' | 'now'>[],
    together = false,
  ): Promise<(TaskModel | undefined)[]> {
    const rows = batch.map((b) => casRow(b.task, b.change, b.now));
    let results: (TaskModel | undefined)[] = new Array(batch.length);
    if (together && batch.length > 1 && setBytes(rows) <= ONE_STATEMENT_MAX_BYTES) {
      results = (await this.compareAndSetMany(m, batch, rows)) ?? [];
      if (results.length === 0) throw new GroupRaceLost();
    } else {
      const order = batch
        .map((_, i) => i)
        .sort((a, b) =>
          batch[a].task.taskId < batch[b].task.taskId
            ? -1
            : batch[a].task.taskId > batch[b].task.taskId
              ? 1
              : a - b,
        );
      for (const i of order) results[i] = await this.compareAndSet(m, batch[i].task, rows[i]);
    }
    const events: Record<string, unknown>[] = [];
    const started: Record<string, unknown>[] = [];
    // In arrival order: two changes of one task log their events in the order they were made.
    for (let i = 0; i < batch.length; i++) {
      const next = results[i];
      if (!next) continue;
      const { task, change, now } = batch[i];
      const path = statusPath(task.status, change);
      if (path.length > 1 || change.note) {
        const reason = clip(change.reason, 1000);
        const moves: [TaskStatus, TaskStatus][] =
          path.length > 1
            ? path.slice(1).map((to, k) => [path[k], to])
            : [[task.status, task.status]];
        for (const [from, to] of moves)
          events.push({
            task_id: task.taskId,
            from_status: from,
            to_status: to,
            reason,
            actor: change.actor,
            attempt: next.attempt,
            created_at: now,
          });
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
    await this.insertRows(m, 'baton_task_event', events);
    await this.insertRows(m, 'baton_task_attempt', started);
    const ended: AttemptEnd[] = [];
    for (let i = 0; i < batch.length; i++) {
      const next = results[i];
      const { task, change, now } = batch[i];
      // An attempt ends exactly when the task leaves a status in which one is under way: derived
      // here for every caller, so none can forget it or close an attempt that already ended.
      if (!next || !OPEN_ATTEMPT.has(task.status) || OPEN_ATTEMPT.has(next.status)) continue;
      const outcome = change.attemptEnd?.outcome ?? next.status;
      const error =
        change.attemptEnd !== undefined
          ? change.attemptEnd.error
          : outcome === TaskStatus.FAIL || outcome === TaskStatus.NONE
            ? change.reason
            : null;
      ended.push({
        taskId: task.taskId,
        attempt: task.attempt,
        at: now,
        outcome,
        error: error && clip(error, 2000),
      });
    }
    await this.endAttempts(m, ended);
    return results;
  }

  /** Closes attempt rows: one statement for the group (each task's row once). */
  private async endAttempts(m: EntityManager, ended: readonly AttemptEnd[]): Promise<void> {
    if (ended.length === 0) return;
    if (ended.length === 1 || new Set(ended.map((e) => e.taskId)).size !== ended.length) {
      for (const e of ended)
        await this.exec(
          m,
          'UPDATE baton_task_attempt SET ended_at = ?, outcome = ?, error = ? WHERE task_id = ? AND attempt = ?',
          [e.at, e.outcome, e.error, e.taskId, e.attempt],
        );
      return;
    }
    for (let i = 0; i < ended.length; i += MAX_GROUP) {
      const part = ended.slice(i, i + MAX_GROUP);
      const cases = part.map(() => 'WHEN ? THEN ?').join(' ');
      const column = (pick: (e: AttemptEnd) => unknown): unknown[] =>
        part.flatMap((e) => [e.taskId, pick(e)]);
      await this.exec(
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

  /** The row update of one change, if the task is still at its version. */
  private async compareAndSet(
    m: EntityManager,
    task: TaskModel,
    { set, next }: CasRow,
  ): Promise<TaskModel | undefined> {
    // Plain SQL on the hot path: the query builder cost more CPU than the database did.
    const res = await this.exec(
      m,
      `UPDATE baton_task SET version = version + 1, ${set.map(([c]) => `${c} = ?`).join(', ')} WHERE task_id = ? AND version = ?`,
      [...set.map(([, v]) => v), task.taskId, task.version],
    );
    return res.affected === 1 ? next : undefined;
  }

  /**
   * The row updates of several changes (of distinct tasks) as one statement: each column is a
   * CASE on task_id, each row still conditional on its own version. All or nothing: when fewer
   * rows than changes matched, some change lost its race, and which one cannot be told from the
   * count, so undefined is returned and the caller rolls the group back and goes row by row.
   */
  private async compareAndSetMany(
    m: EntityManager,
    items: readonly Pick<PendingChange, 'task' | 'change' | 'now'>[],
    rows: readonly CasRow[],
  ): Promise<TaskModel[] | undefined> {
    const columns = new Map<string, number>();
    for (const r of rows) for (const [c] of r.set) columns.set(c, (columns.get(c) ?? 0) + 1);
    const sets: string[] = ['version = version + 1'];
    const params: unknown[] = [];
    for (const [column, count] of columns) {
      let cases = '';
      rows.forEach((r, i) => {
        const hit = r.set.find(([c]) => c === column);
        if (!hit) return;
        cases += ' WHEN ? THEN ?';
        params.push(items[i].task.taskId, hit[1]);
      });
      // A column only some changes set keeps its value in the other rows.
      sets.push(
        `${column} = CASE task_id${cases}${count === rows.length ? '' : ` ELSE ${column}`} END`,
      );
    }
    const ids = items.map((i) => i.task.taskId);
    params.push(...ids);
    for (const i of items) params.push(i.task.taskId, i.task.version);
    const res = await this.exec(
      m,
      `UPDATE baton_task SET ${sets.join(', ')} WHERE task_id IN (${ids.map(() => '?').join(', ')}) AND version = CASE task_id${' WHEN ? THEN ?'.repeat(items.length)} END`,
      params,
    );
    return res.affected === items.length ? rows.map((r) => r.next) : undefined;
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

  /** INSERTs rows (all with the same columns) in chunks that stay under every driver's parameter limit. */
  private async insertRows(
    m: EntityManager,
    table: string,
    rows: readonly Record<string, unknown>[],
  ): Promise<void> {
    if (rows.length === 0) return;
    const columns = Object.keys(rows[0]);
    const chunk = Math.max(1, Math.floor(8000 / columns.length));
    for (let i = 0; i < rows.length; i += chunk) {
      const part = rows.slice(i, i + chunk);
      const tuple = `(${columns.map(() => '?').join(', ')})`;
      await this.exec(
        m,
        `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${part.map(() => tuple).join(', ')}`,
        part.flatMap((r) => columns.map((c) => toColumn(c, r[c]))),
      );
    }
  }

  /** Runs SQL on the transaction's connection, or on its own (released after). */
  private async exec(
    m: EntityManager | undefined,
    sql: string,
    params: unknown[],
  ): Promise<{ records: unknown[]; affected: number | undefined }> {
    const own = m?.queryRunner ? undefined : this.db.createQueryRunner();
    const runner = m?.queryRunner ?? (own as NonNullable<typeof own>);
    try {
      const result = await runner.query(sql, params, true);
      return { records: result.records ?? [], affected: result.affected };
    } finally {
      await own?.release();
    }
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
      .select(['t.task_id', 't.priority', 't.due_at', 't.status'])
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
      this.exec(
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
   * compare-and-set still holds, and it reads the flag before it plans a retry or a next life. Applies only while
   * the task is RUNNING the attempt under `fence`, and is logged as a note. False when the task
   * has moved on meanwhile.
   */
  async requestCancel(
    taskId: string,
    attempt: number,
    fence: number,
    actor: string,
    reason: string,
    now: number,
  ): Promise<boolean> {
    return this.tx.run(async (m) => {
      const res = await this.exec(
        m,
        'UPDATE baton_task SET cancel_requested = 1, updated_at = ? WHERE task_id = ? AND status = ? AND attempt = ? AND fence = ?',
        [now, taskId, TaskStatus.RUNNING, attempt, fence],
      );
      if (res.affected !== 1) return false;
      await this.insertRows(m, 'baton_task_event', [
        {
          task_id: taskId,
          from_status: TaskStatus.RUNNING,
          to_status: TaskStatus.RUNNING,
          reason: clip(reason, 1000),
          actor,
          attempt,
          created_at: now,
        },
      ]);
      return true;
    });
  }

  /** Whether a cancel was asked for (read fresh: see `requestCancel`). */
  async cancelRequested(taskId: string): Promise<boolean> {
    const { records } = await this.exec(
      undefined,
      'SELECT cancel_requested FROM baton_task WHERE task_id = ?',
      [taskId],
    );
    const row = records[0] as { cancel_requested?: unknown } | undefined;
    return Boolean(Number(row?.cancel_requested ?? 0));
  }

  /** Running tasks per type (concurrency limits). */
  /**
   * Another task that holds one of `keys` by its state: an attempt under way or an outcome not
   * yet cleaned up (the lock lease of a scheduler that died may have run out, the state has not).
   */
  async lockKeyHolder(keys: readonly string[], exceptTaskId: string): Promise<string | undefined> {
    if (keys.length === 0) return undefined;
    // Keys are stored as a JSON array of strings with no quotes or backslashes in them.
    const like = keys.map(() => "t.lock_keys LIKE :k ESCAPE '!'");
    const row = await this.db.manager
      .createQueryBuilder(TaskEntity, 't')
      .select('t.task_id', 'task_id')
      .where('t.task_id <> :except', { except: exceptTaskId })
      .andWhere(
        new Brackets((b) =>
          b
            .where('t.status IN (:...holding)', { holding: [...HOLDING_STATUSES] })
            .orWhere('(t.status = :fail AND t.outcome IS NOT NULL)', { fail: TaskStatus.FAIL }),
        ),
      )
      .andWhere(
        new Brackets((b) => {
          keys.forEach((k, i) => {
            const pattern = `%"${k.replace(/[!%_]/g, (c) => `!${c}`)}"%`;
            const clause = like[i].replace(':k', `:k${i}`);
            if (i === 0) b.where(clause, { [`k${i}`]: pattern });
            else b.orWhere(clause, { [`k${i}`]: pattern });
          });
        }),
      )
      .limit(1)
      .getRawOne<{ task_id: string }>();
    return row?.task_id;
  }

  async countByStatus(taskType: string, statuses: readonly TaskStatus[]): Promise<number> {
    return this.db.manager.countBy(TaskEntity, { task_type: taskType, status: In([...statuses]) });
  }
}
