import {
  BlockingKind,
  ContractCall,
  CreateTaskRequestDto,
  RepetitionKind,
  TaskStatus,
} from '@baton/task-contract';
import { TaskChange, TaskModel } from '../task-store';
import { TaskTypeModel } from '../task-types';

/*
 * The engine's rules that need no I/O: what a step returns, which statuses are driven, how long
 * a run may take, how long to wait before trying again, what a worker is sent.
 */

/** Statuses the engine drives when they are due; the rest wait for a person or a worker. */
export const DRIVABLE: readonly TaskStatus[] = [
  TaskStatus.INIT,
  TaskStatus.POSTPONE,
  TaskStatus.CREATE,
  TaskStatus.PREPARE,
  TaskStatus.RUNNING,
  TaskStatus.SUCCESS,
  TaskStatus.FAIL,
  TaskStatus.ROLLBACK,
  TaskStatus.NONE,
  // Only with a person's re-run or late rollback pending (a FINISH row has no due time else).
  TaskStatus.FINISH,
];

/**
 * Tasks are taken (queue and claim) up to this long before they fall due, so the claim is made
 * before the instant. With a start_time that close, the checks and the write that opens the
 * attempt are done ahead too (RUNNING with started_at = start_time for a create_run, which is
 * sent at once: the worker begins the run on start_time); a create call waits in memory for the
 * instant.
 */
export const EARLY_CLAIM_MS = 25;

/** The engine stopped driving a task for now: it waits, or it is done. */
export interface Rest {
  rest: true;
}
export const REST: Rest = { rest: true };
/** What a step of the engine leads to: the task to go on with, or a rest. */
export type Step = TaskModel | Rest;

export function isRest(s: Step): s is Rest {
  return 'rest' in s;
}

export function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

const DEFAULT_SYNC_RUN_SECONDS = 300;

/** The bound of a run: the task's deadline, else its type's, else (a sync run) 300 s; null for none. */
export function deadlineSeconds(t: TaskModel, type: TaskTypeModel): number | null {
  return (
    t.deadlineSecond ??
    type.deadlineSecond ??
    (type.blocking === BlockingKind.SYNC ? DEFAULT_SYNC_RUN_SECONDS : null)
  );
}

/** How long a sync run call may take. */
export function syncRunTimeoutMs(t: TaskModel, type: TaskTypeModel | undefined): number {
  return (t.deadlineSecond ?? type?.deadlineSecond ?? DEFAULT_SYNC_RUN_SECONDS) * 1000;
}

/** Exponential backoff with equal jitter: half fixed, half random. */
export function backoff(
  type: TaskTypeModel,
  attempt: number,
  random: () => number = Math.random,
): number {
  const exp = Math.min(type.backoffMaxMs, type.backoffBaseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exp / 2 + random() * (exp / 2));
}

/** Attempts that count against max_retry: all but those opened by moving the task elsewhere. */
export function countedAttempts(t: TaskModel): number {
  return Math.max(0, t.attempt - t.moves);
}

/** A permanent task that nobody cancelled: every end of a life starts the next one. */
export function keptAlive(t: TaskModel): boolean {
  return t.repetition === RepetitionKind.PERMANENT && !t.cancelRequested;
}

/**
 * The wait before a permanent task's next life: the type's backoff, growing while lives end
 * quickly (a crash loop), back to the base after a life that lasted longer than the longest wait.
 */
export function restartBackoff(
  t: TaskModel,
  type: TaskTypeModel,
  now: number,
  random: () => number = Math.random,
): number {
  const lived = t.startedAt === null ? 0 : now - t.startedAt;
  return backoff(type, lived >= type.backoffMaxMs ? 1 : t.attempt, random);
}

/** The worker takes create and run in one call for this type (sync, nothing to prepare). */
export function createsAndRuns(type: TaskTypeModel): boolean {
  return (
    type.blocking === BlockingKind.SYNC &&
    !type.implements.includes(ContractCall.PREPARE) &&
    type.implements.includes(ContractCall.CREATE_RUN)
  );
}

/** The create call's body for an attempt of the task. */
export function createBody(t: TaskModel, attempt: number): CreateTaskRequestDto {
  return {
    task_id: t.taskId,
    attempt,
    create_info: {
      task_type: t.taskType,
      task_name: t.taskName,
      important_level: t.priority,
      ...(t.workerUrl ? { http_url: t.workerUrl } : {}),
      ...(t.parentTaskId ? { parent_task_id: t.parentTaskId } : {}),
      ...(t.controlTaskId ? { control_task_id: t.controlTaskId } : {}),
    },
    process_arg: {
      ...(t.startTime !== null ? { start_time: new Date(t.startTime).toISOString() } : {}),
      ...(t.deadlineSecond !== null ? { deadline_second: t.deadlineSecond } : {}),
      ...(t.lockTimeout !== null ? { lock_timeout: t.lockTimeout } : {}),
      max_retry: Math.max(0, t.maxRetry),
    },
    params: t.params,
    lock_keys: t.lockKeys,
  };
}
/**
 * The write of a run's outcome, reported by the worker (callback) or seen by a poll. A failure
 * is not final yet: the engine decides between retry and giving up ('decide').
 */
export function outcomeChange(
  t: TaskModel,
  outcome: TaskStatus.SUCCESS | TaskStatus.FAIL,
  result: Record<string, unknown> | null,
  error: { message: string; code?: string | null } | null,
  how: string,
  now: number,
): Omit<TaskChange, 'actor'> {
  return {
    via: t.status === TaskStatus.PAUSE ? [TaskStatus.RUNNING] : [],
    to: outcome,
    patch: {
      result,
      error,
      dueAt: now,
      heartbeatAt: now,
      pendingAction: outcome === TaskStatus.FAIL ? 'decide' : t.pendingAction,
      ...(outcome === TaskStatus.SUCCESS
        ? {
            progress: {
              percent: 100,
              step: t.progress?.step ?? null,
              message: t.progress?.message ?? null,
            },
          }
        : {}),
    },
    reason:
      outcome === TaskStatus.SUCCESS
        ? `${how} success`
        : `${how} failure: ${error?.message ?? 'no reason'}`,
    attemptEnd: { outcome, error: error?.message ?? null },
  };
}
