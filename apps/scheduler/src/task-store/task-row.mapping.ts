import { BlockingKind, RepetitionKind, TaskOutcome, TaskStatus } from '@baton/task-contract';
import { TaskEventEntity } from './task-event.entity';
import { TaskEntity } from './task.entity';
import { TaskEventModel, TaskModel, TaskPatch } from './task.model';

/*
 * How a task is stored: entity <-> model, raw rows of either driver, and the values columns hold
 * (JSON as text, booleans as 0/1, worker JSON bounded). Pure functions: no I/O here.
 */

/** The column of each field a change may set. */
export const PATCH_COLUMNS: Readonly<Record<keyof TaskPatch, keyof TaskEntity>> = {
  attempt: 'attempt',
  moves: 'moves',
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
  waiting: 'waiting',
  outcome: 'outcome',
  pausedFrom: 'paused_from',
  cancelRequested: 'cancel_requested',
  pendingAction: 'pending_action',
  startedAt: 'started_at',
  finishedAt: 'finished_at',
};

export function toModel(e: TaskEntity): TaskModel {
  return {
    taskId: e.task_id,
    taskType: e.task_type,
    taskName: e.task_name,
    tenant: e.tenant,
    labels: e.labels ?? {},
    status: e.status as TaskStatus,
    version: e.version,
    attempt: e.attempt,
    moves: e.moves ?? 0,
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
    waiting: e.waiting ?? null,
    outcome: e.outcome as TaskOutcome | null,
    pausedFrom: e.paused_from as TaskStatus | null,
    cancelRequested: Boolean(e.cancel_requested),
    pendingAction: e.pending_action as TaskModel['pendingAction'],
    createdAt: e.created_at,
    updatedAt: e.updated_at,
    startedAt: e.started_at,
    finishedAt: e.finished_at,
  };
}

export function toEntity(m: TaskModel): TaskEntity {
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
    moves: m.moves,
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
    waiting: m.waiting,
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

export const eventModel = (e: TaskEventEntity): TaskEventModel => ({
  id: Number(e.id),
  taskId: e.task_id,
  from: e.from_status as TaskStatus | null,
  to: e.to_status as TaskStatus,
  reason: e.reason,
  actor: e.actor,
  attempt: e.attempt,
  at: e.created_at,
  repeats: Number(e.repeats ?? 1),
  lastAt: e.last_at ?? null,
});

const JSON_COLUMNS: ReadonlySet<string> = new Set([
  'labels',
  'params',
  'lock_keys',
  'result',
  'error',
  'progress',
  'waiting',
]);
const NUMBER_COLUMNS: ReadonlySet<string> = new Set([
  'version',
  'attempt',
  'moves',
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
export function fromRow(row: Record<string, unknown>): TaskEntity {
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
export function entityRow(e: TaskEntity): Record<string, unknown> {
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
export function toColumn(column: string, value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (WORKER_JSON_COLUMNS.has(column)) return bounded(column, value, JSON.stringify(value));
  if (JSON_COLUMNS.has(column)) return JSON.stringify(value);
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

/** `s` cut to `n` characters, marked when cut. */
export const clip = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
