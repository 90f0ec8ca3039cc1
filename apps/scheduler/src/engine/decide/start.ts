import { TaskStatus, canTransition } from '@baton/task-contract';
import { TaskModel, TaskPatch, TaskWait } from '../../task-store';
import { TaskTypeModel } from '../../task-types';
import { EARLY_CLAIM_MS, backoff } from '../engine-rules';

import { Change, Random } from './types';

/** What keeps a task from starting now (`baton_task_start_waits_total{reason}`). */
export type WaitReason =
  'start_time' | 'rate_limit' | 'concurrency_limit' | 'lock_key' | 'no_worker';

/**
 * Whether the task's start time is still ahead: then it waits for it. Claimed a moment early
 * (EARLY_CLAIM_MS) goes on: the worker is called on the instant itself, the checks done before.
 */
export function startTimeWait(
  t: TaskModel,
  now: number,
): { until: number; reason: 'start_time'; why: string } | undefined {
  if (t.startTime === null || t.startTime - now <= EARLY_CLAIM_MS) return undefined;
  return {
    until: t.startTime,
    reason: 'start_time',
    why: `waiting for start_time ${new Date(t.startTime).toISOString()}`,
  };
}

/**
 * The first of the three timeouts: a first attempt waited too long to start at all (checked after
 * the rate limits). `fail` ends the task; `alert` (and `retry`, which for a task that never
 * started means: keep waiting) only tells people.
 */
export function queueTimeout(
  t: TaskModel,
  type: TaskTypeModel,
  now: number,
): { policy: 'fail' | 'alert'; why: string } | undefined {
  if (type.queueTimeoutMs === null || t.attempt !== 0) return undefined;
  const waited = now - (t.startTime ?? t.createdAt);
  if (waited <= type.queueTimeoutMs) return undefined;
  return {
    policy: type.timeoutPolicy.queue === 'fail' ? 'fail' : 'alert',
    why: `waited ${waited} ms to start (queue timeout ${type.queueTimeoutMs} ms)`,
  };
}

/** When a start that met a busy limit, a held lock key or no worker looks again. */
export function startWaitUntil(type: TaskTypeModel, now: number, random: Random = Math.random) {
  return now + backoff(type, 1, random);
}

/** A re-drive of an attempt already bound to its worker (CREATE, PREPARE): same attempt, same worker. */
export function sameAttempt(t: TaskModel): boolean {
  return t.status === TaskStatus.CREATE || t.status === TaskStatus.PREPARE;
}

/**
 * The task may not start yet. A first start waits in POSTPONE; a retry (FAIL) or a re-create
 * (NONE) waits where it is, since the table has no move from there to POSTPONE: the wait is
 * logged as an event either way. An attempt already bound to its worker (CREATE, PREPARE) is
 * given up: not counted against max_retry, and its worker is told to drop it.
 */
export function postponeChange(
  t: TaskModel,
  until: number,
  code: WaitReason,
  why: string,
  now: number,
): Change {
  const bound = sameAttempt(t);
  // Told once: the same wait found again (same reason, same holder: `why` names both) is a check
  // counted on the row that told it, not a row of its own.
  const again = !bound && t.waiting !== null && t.waiting.why === why;
  const waiting: TaskWait = again
    ? { ...t.waiting!, last: now, checks: t.waiting!.checks + 1 }
    : { code, why: clipWhy(why), since: now, last: now, checks: 1 };
  const patch: TaskPatch = {
    dueAt: until,
    owner: null,
    leaseUntil: null,
    waiting,
    ...(bound ? { moves: t.moves + 1 } : {}),
  };
  if (again) return { patch, reason: `waiting: ${why}`, note: true, repeatOf: why };
  return canTransition(t.status, TaskStatus.POSTPONE)
    ? {
        to: TaskStatus.POSTPONE,
        patch,
        reason: why,
        ...(bound ? { attemptEnd: { outcome: TaskStatus.POSTPONE, error: why, drop: true } } : {}),
      }
    : { patch, reason: `waiting: ${why}`, note: true };
}

/** A reason kept on the task row (the log keeps it whole). */
const clipWhy = (why: string): string => (why.length > 1000 ? `${why.slice(0, 999)}…` : why);
