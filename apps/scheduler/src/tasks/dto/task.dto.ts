import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  BlockingKind,
  RepetitionKind,
  TASK_OUTCOMES,
  TaskOutcome,
  TaskStatus,
} from '@baton/task-contract';
import { TaskAttemptModel, TaskEventModel, TaskModel } from '../../task-store';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** What a task waits for, told once however often it is checked. */
export class TaskWaitDto {
  @ApiProperty({
    enum: ['start_time', 'rate_limit', 'concurrency_limit', 'lock_key', 'no_worker'],
    description: 'what stands in the way',
  })
  reason!: string;
  @ApiProperty({
    description:
      'in words, naming the holder of a lock key (`task <id>`, or `a task of another tenant`) or the limit',
    example: 'lock key held by task 01JDZ8Q3M4X7J2V9R5T6Y8W0AB: db:orders',
  })
  message!: string;
  @ApiProperty({ format: 'date-time', description: 'when this wait was first found' })
  since!: string;
  @ApiProperty({ format: 'date-time', description: 'when it was last checked' })
  last_checked_at!: string;
  @ApiProperty({ type: 'integer', description: 'how many times it was checked and found' })
  checks!: number;
}

export class TaskDto {
  @ApiProperty() task_id!: string;
  @ApiProperty() task_type!: string;
  @ApiProperty() task_name!: string;
  @ApiProperty() tenant!: string;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) labels!: Record<
    string,
    string
  >;
  @ApiProperty({ enum: TaskStatus, enumName: 'TaskStatus' }) task_status!: TaskStatus;
  @ApiPropertyOptional({
    enum: TASK_OUTCOMES,
    enumName: 'TaskOutcome',
    nullable: true,
    description:
      'once decided: SUCCESS, FAIL, ROLLBACK (undone), or CANCELLED (stopped because someone asked: not a failure)',
  })
  outcome!: TaskOutcome | null;
  @ApiProperty({ type: 'integer' }) version!: number;
  @ApiProperty({ type: 'integer' }) attempt!: number;
  @ApiProperty({ type: 'integer' }) important_level!: number;
  @ApiProperty({ enum: BlockingKind }) blocking!: BlockingKind;
  @ApiProperty({ enum: RepetitionKind }) repetition!: RepetitionKind;
  @ApiProperty({
    type: 'integer',
    description: 'permanent tasks: how many times a new life was started after one ended (else 0)',
  })
  restarts!: number;
  @ApiProperty({ type: 'object', additionalProperties: true }) params!: Record<string, unknown>;
  @ApiProperty({ type: [String] }) lock_keys!: string[];
  @ApiPropertyOptional({ nullable: true, type: String }) worker_id!: string | null;
  @ApiPropertyOptional({ nullable: true, type: String }) http_url!: string | null;
  @ApiPropertyOptional({ nullable: true, type: String }) parent_task_id!: string | null;
  @ApiPropertyOptional({ nullable: true, type: String }) control_task_id!: string | null;
  @ApiPropertyOptional({ nullable: true, type: String, format: 'date-time' }) start_time!:
    string | null;
  @ApiPropertyOptional({ nullable: true, type: 'integer' }) deadline_second!: number | null;
  @ApiPropertyOptional({ nullable: true, type: 'integer' }) lock_timeout!: number | null;
  @ApiPropertyOptional({
    nullable: true,
    type: 'integer',
    description: 'null: the task type’s policy',
  })
  max_retry!: number | null;
  @ApiPropertyOptional({ nullable: true, type: String }) idempotency_key!: string | null;
  @ApiPropertyOptional({ nullable: true, type: String }) callback_url!: string | null;
  @ApiPropertyOptional({
    nullable: true,
    type: String,
    format: 'date-time',
    description: 'when the scheduler looks at it next',
  })
  due_at!: string | null;
  @ApiProperty({ type: 'integer' }) fence!: number;
  @ApiProperty({
    description: 'a cancel was asked for: the task is stopping, and no retry or next life follows',
  })
  cancel_requested!: boolean;
  @ApiPropertyOptional({ nullable: true, type: 'object', additionalProperties: true })
  result!: Record<string, unknown> | null;
  @ApiPropertyOptional({ nullable: true, type: 'object', additionalProperties: true }) error!: {
    message: string;
    code?: string | null;
  } | null;
  @ApiPropertyOptional({ nullable: true, type: 'object', additionalProperties: true })
  progress!: TaskModel['progress'];
  @ApiPropertyOptional({ nullable: true, type: String, format: 'date-time' }) heartbeat_at!:
    string | null;
  @ApiPropertyOptional({
    nullable: true,
    type: () => TaskWaitDto,
    description:
      'what keeps the task from starting now, as last checked (null when nothing does: it is not waiting, or has started)',
  })
  waiting!: TaskWaitDto | null;
  @ApiProperty({ format: 'date-time' }) created_at!: string;
  @ApiProperty({ format: 'date-time' }) updated_at!: string;
  @ApiPropertyOptional({ nullable: true, type: String, format: 'date-time' }) started_at!:
    string | null;
  @ApiPropertyOptional({ nullable: true, type: String, format: 'date-time' }) finished_at!:
    string | null;
}

export function toTaskDto(t: TaskModel): TaskDto {
  return {
    task_id: t.taskId,
    task_type: t.taskType,
    task_name: t.taskName,
    tenant: t.tenant,
    labels: t.labels,
    task_status: t.status,
    outcome: t.outcome,
    version: t.version,
    attempt: t.attempt,
    important_level: t.priority,
    blocking: t.blocking,
    repetition: t.repetition,
    // Each life of a permanent task is an attempt: every one after the first is a restart.
    restarts: t.repetition === RepetitionKind.PERMANENT ? Math.max(0, t.attempt - 1) : 0,
    params: t.params,
    lock_keys: t.lockKeys,
    worker_id: t.workerId,
    http_url: t.workerUrl ?? t.requestedUrl,
    parent_task_id: t.parentTaskId,
    control_task_id: t.controlTaskId,
    start_time: iso(t.startTime),
    deadline_second: t.deadlineSecond,
    lock_timeout: t.lockTimeout,
    max_retry: t.maxRetry >= 0 ? t.maxRetry : null,
    idempotency_key: t.idempotencyKey,
    callback_url: t.callbackUrl,
    due_at: iso(t.dueAt),
    fence: t.fence,
    cancel_requested: t.cancelRequested,
    result: t.result,
    error: t.error,
    progress: t.progress,
    heartbeat_at: iso(t.heartbeatAt),
    waiting: t.waiting && {
      reason: t.waiting.code,
      message: t.waiting.why,
      since: iso(t.waiting.since) as string,
      last_checked_at: iso(t.waiting.last) as string,
      checks: t.waiting.checks,
    },
    created_at: iso(t.createdAt) as string,
    updated_at: iso(t.updatedAt) as string,
    started_at: iso(t.startedAt),
    finished_at: iso(t.finishedAt),
  };
}

export class TaskPageDto {
  @ApiProperty({ type: [TaskDto] }) items!: TaskDto[];
  @ApiPropertyOptional({
    nullable: true,
    type: String,
    description: 'pass as cursor for the next page; null on the last',
  })
  next_cursor!: string | null;
}

export class TaskEventDto {
  @ApiProperty({ type: 'integer' }) id!: number;
  @ApiPropertyOptional({ enum: TaskStatus, nullable: true }) from!: TaskStatus | null;
  @ApiProperty({ enum: TaskStatus }) to!: TaskStatus;
  @ApiProperty() reason!: string;
  @ApiProperty() actor!: string;
  @ApiProperty({ type: 'integer' }) attempt!: number;
  @ApiProperty({ format: 'date-time' }) at!: string;
  @ApiProperty({
    type: 'integer',
    description:
      'a wait is told once: the same wait found again (same reason, same holder) counts here instead of a row of its own; 1 for every other row',
  })
  repeats!: number;
  @ApiPropertyOptional({
    nullable: true,
    type: String,
    format: 'date-time',
    description: 'when the repeated wait was last found; null when repeats is 1',
  })
  last_at!: string | null;
}

export const toEventDto = (e: TaskEventModel): TaskEventDto => ({
  id: e.id,
  from: e.from,
  to: e.to,
  reason: e.reason,
  actor: e.actor,
  attempt: e.attempt,
  at: iso(e.at) as string,
  repeats: e.repeats,
  last_at: iso(e.lastAt),
});

export class TaskAttemptDto {
  @ApiProperty({ type: 'integer' }) attempt!: number;
  @ApiPropertyOptional({ nullable: true, type: String }) worker_id!: string | null;
  @ApiPropertyOptional({ nullable: true, type: String }) worker_url!: string | null;
  @ApiProperty({ type: 'integer' }) fence!: number;
  @ApiProperty({ format: 'date-time' }) started_at!: string;
  @ApiPropertyOptional({ nullable: true, type: String, format: 'date-time' }) ended_at!:
    string | null;
  @ApiPropertyOptional({ enum: TaskStatus, nullable: true }) outcome!: TaskStatus | null;
  @ApiPropertyOptional({ nullable: true, type: String }) error!: string | null;
  @ApiPropertyOptional({
    nullable: true,
    enum: ['pending', 'done'],
    description:
      'For an attempt the scheduler gave up while its worker may still hold it (a call that ' +
      'never reached the worker or timed out, a move to another worker): pending while the ' +
      'worker is still to be told to drop it (a cancel notify, retried with backoff), done once ' +
      'it was told or is no longer registered. Null when nothing was owed.',
  })
  drop!: 'pending' | 'done' | null;
  @ApiPropertyOptional({ nullable: true, type: String, format: 'date-time' }) dropped_at!:
    string | null;
}

export const toAttemptDto = (a: TaskAttemptModel): TaskAttemptDto => ({
  attempt: a.attempt,
  worker_id: a.workerId,
  worker_url: a.workerUrl,
  fence: a.fence,
  started_at: iso(a.startedAt) as string,
  ended_at: iso(a.endedAt),
  outcome: a.outcome,
  error: a.error,
  drop: a.drop,
  dropped_at: iso(a.droppedAt),
});
