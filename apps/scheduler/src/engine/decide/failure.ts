import {
  CANCELLED_OUTCOME,
  IllegalTransitionError,
  StaleFenceError,
  TaskStatus,
  WorkerCallError,
  WorkerTimeoutError,
  WorkerUnavailableError,
  canTransition,
  neverReachedWorker,
} from '@baton/task-contract';
import { TaskModel, TaskPatch } from '../../task-store';
import { TaskTypeModel } from '../../task-types';
import { backoff, countedAttempts, keptAlive, restartBackoff } from '../engine-rules';

import { Change, Random } from './types';

/** What ended an attempt without success. */
export interface Failure {
  why: string;
  /** Whether the failure may be retried at all (a refusal of the worker may not). */
  retryable: boolean;
  /** The scheduler gives the attempt up while its worker may still hold it (told to drop it). */
  drop: boolean;
  code?: string;
}

export type FailurePlan =
  /** A permanent task's next life could not start: it waits in SUCCESS for another try. */
  | { kind: 'next-life' }
  /** A task in SUCCESS that is not kept alive: it ends as a success. */
  | { kind: 'clean-success' }
  /** FAIL with a due time (its lock keys given back): a retry after backoff, or a permanent task's next life. */
  | { kind: 'retry' | 'restart'; change: Change }
  /** FAIL for good (outcome written; the keys are kept until it is rolled back or cleaned). */
  | { kind: 'final'; change: Change };

/**
 * An attempt failed: retry with backoff while attempts remain (max_retry counts the attempts that
 * reached a worker, not moves), a permanent task's next life whatever ended this one (until it is
 * cancelled), or the final failure: a cancel asked for ends as CANCELLED, not FAIL.
 */
export function decideFailure(
  t: TaskModel,
  type: TaskTypeModel,
  f: Failure,
  now: number,
  random: Random = Math.random,
): FailurePlan {
  if (t.status === TaskStatus.SUCCESS) {
    return keptAlive(t) ? { kind: 'next-life' } : { kind: 'clean-success' };
  }
  const maxRetry = t.maxRetry >= 0 ? t.maxRetry : type.maxRetry;
  const restart = keptAlive(t);
  const counted = countedAttempts(t);
  const retry = restart || (f.retryable && !t.cancelRequested && counted <= maxRetry);
  const error = f.code ? { message: f.why, code: f.code } : { message: f.why };
  const attemptEnd = { outcome: TaskStatus.FAIL, error: f.why, drop: f.drop };
  if (!retry) {
    return {
      kind: 'final',
      change: {
        to: TaskStatus.FAIL,
        patch: {
          error,
          // Stopped because someone asked: the end is a cancel, not a failure.
          outcome: t.cancelRequested ? CANCELLED_OUTCOME : TaskStatus.FAIL,
          pendingAction: null,
          dueAt: now,
        },
        attemptEnd,
        reason: `failed: ${f.why}`,
      },
    };
  }
  const wait = restart ? restartBackoff(t, type, now, random) : backoff(type, counted, random);
  return {
    kind: restart ? 'restart' : 'retry',
    change: {
      to: TaskStatus.FAIL,
      patch: {
        error,
        outcome: null,
        pendingAction: null,
        dueAt: now + wait,
        owner: null,
        leaseUntil: null,
      },
      attemptEnd,
      reason: restart
        ? `life ${t.attempt} of a permanent task ended (${f.why}); restart ${t.attempt} in ${wait} ms`
        : `attempt ${t.attempt} failed (${f.why}); retry ${counted} of ${maxRetry}`,
    },
  };
}

/** A failure with no attempt behind it (the type is gone, the params were refused): FAIL for good. */
export function decideUnstartable(t: TaskModel, why: string, code: string, now: number) {
  if (t.status === TaskStatus.SUCCESS) {
    return keptAlive(t) ? ({ kind: 'next-life' } as const) : ({ kind: 'clean-success' } as const);
  }
  return {
    kind: 'final',
    change: {
      to: TaskStatus.FAIL,
      patch: { error: { message: why, code }, outcome: TaskStatus.FAIL, dueAt: now },
      reason: `failed: ${why}`,
    } satisfies Change,
  } as const;
}

/** The wait before the next attempt of a task that moves (or is recovered): at once the first time. */
function moveWait(t: TaskModel, type: TaskTypeModel, random: Random): number {
  return t.moves === 0 ? 0 : backoff(type, Math.min(t.moves, 16), random);
}

/**
 * Crash recovery: the attempt's run was lost with its worker's process (`execution_lost`). The
 * next attempt is a recovery, not a retry: counted as a move, never against max_retry, at once the
 * first time. A cancel asked for meanwhile ends the task instead (a final, dropped failure).
 */
export function decideRecovery(
  t: TaskModel,
  type: TaskTypeModel,
  why: string,
  now: number,
  random: Random = Math.random,
): { kind: 'cancelled'; failure: Failure } | { kind: 'recover'; change: Change } {
  if (t.cancelRequested)
    return { kind: 'cancelled', failure: { why, retryable: false, drop: true } };
  return {
    kind: 'recover',
    change: {
      to: TaskStatus.FAIL,
      patch: {
        moves: t.moves + 1,
        dueAt: now + moveWait(t, type, random),
        owner: null,
        leaseUntil: null,
        pendingAction: null,
        error: { message: why, code: 'execution_lost' },
        outcome: null,
      },
      attemptEnd: { outcome: TaskStatus.FAIL, error: why, drop: true },
      reason: `${why}; recovered by attempt ${t.attempt + 1} (a recovery, not counted against max_retry)`,
    },
  };
}

/**
 * The attempt is given up without counting it (it never reached its worker, or every worker
 * refuses it): POSTPONE where the table allows (CREATE, PREPARE), else through FAIL with no
 * outcome, like a retry. The first move goes at once, later ones back off.
 */
export function moveChange(
  t: TaskModel,
  type: TaskTypeModel,
  why: string,
  now: number,
  random: Random = Math.random,
): Change {
  const patch: TaskPatch = {
    moves: t.moves + 1,
    dueAt: now + moveWait(t, type, random),
    owner: null,
    leaseUntil: null,
    pendingAction: null,
  };
  const reason = `${why}; attempt ${t.attempt} moves to another worker (not counted against max_retry)`;
  return canTransition(t.status, TaskStatus.POSTPONE)
    ? {
        to: TaskStatus.POSTPONE,
        patch,
        attemptEnd: { outcome: TaskStatus.POSTPONE, error: why, drop: true },
        reason,
      }
    : {
        to: TaskStatus.FAIL,
        patch: { ...patch, error: { message: why }, outcome: null },
        attemptEnd: { outcome: TaskStatus.FAIL, error: why, drop: true },
        reason,
      };
}

/** What a failed call to a worker leads to. */
export type CallFailurePlan =
  /** Another scheduler holds the task (a stale fence): stand down, write nothing. */
  | { kind: 'stand-down' }
  /** The attempt goes to another worker, not counted against max_retry. */
  | { kind: 'move'; why: string; workerFault: boolean }
  /** The attempt failed under the retry rules; its worker is told to drop it. */
  | { kind: 'fail'; failure: Failure; workerFault: boolean }
  /**
   * The run call reached the worker but its answer did not come back (a timeout, a connection
   * lost after sending): the run may have ended either way. Nothing is decided: the task is
   * RUNNING and due, so the poll asks the worker (TaskPoller), which records what it says, or a
   * timeout once it stays unreachable past the heartbeat timeout.
   */
  | { kind: 'unknown'; change: Change; workerFault: true };

/** Calls whose outcome is the run's: an answer that did not come back leaves it unknown. */
const RUN_CALLS = new Set(['run', 'create and run']);

/**
 * A call to the worker failed. A call that never reached the worker (refused, no such host, not
 * ready, rate limited) or a create that timed out or was refused for the state the worker holds:
 * the attempt moves (unless a cancel is asked for). Anything else fails the attempt; it is
 * retryable unless the worker answered with a refusal. `workerFault`: count it against the
 * worker's health (it could not be reached, or did not answer in time).
 */
export function decideCallFailure(
  t: TaskModel,
  err: unknown,
  call: string,
  why: string,
  now: number,
): CallFailurePlan {
  if (err instanceof StaleFenceError) return { kind: 'stand-down' };
  const workerFault = err instanceof WorkerUnavailableError || err instanceof WorkerTimeoutError;
  const unsent =
    neverReachedWorker(err) ||
    (call === 'create' &&
      (err instanceof WorkerTimeoutError ||
        err instanceof WorkerUnavailableError ||
        err instanceof IllegalTransitionError));
  if (unsent && !t.cancelRequested) return { kind: 'move', why, workerFault };
  const unanswered =
    err instanceof WorkerTimeoutError ||
    (err instanceof WorkerUnavailableError && err.httpStatus === 0);
  if (!unsent && unanswered && RUN_CALLS.has(call))
    return { kind: 'unknown', workerFault: true, change: outcomeUnknownChange(t, why, now) };
  return {
    kind: 'fail',
    workerFault,
    failure: { why, retryable: !(err instanceof WorkerCallError) || workerFault, drop: true },
  };
}

/**
 * The run's answer did not come back: RUNNING (the run call was sent), due now, with a heartbeat
 * timeout counted from now, for the poll to ask the worker what became of it.
 */
export function outcomeUnknownChange(t: TaskModel, why: string, now: number): Change {
  const patch: TaskPatch = { dueAt: now, owner: null, leaseUntil: null, heartbeatAt: now };
  const reason = `${why}; the outcome is unknown: the worker is asked`;
  if (t.status === TaskStatus.RUNNING) return { patch, reason, note: true };
  return { to: TaskStatus.RUNNING, patch: { ...patch, startedAt: t.startedAt ?? now }, reason };
}
