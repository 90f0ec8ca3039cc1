import { TaskStatus } from '@baton/task-contract';
import { TaskModel, TaskPatch } from '../../task-store';
import { TaskTypeModel, TimeoutPolicy } from '../../task-types';
import { deadlineSeconds } from '../engine-rules';
import { Failure } from './failure';

import { Change } from './types';

/** A timeout under its policy: an alert only (the task goes on), or a failure, retried or not. */
export type TimeoutPlan =
  | { kind: 'alert'; why: string; change: Change }
  | { kind: 'fail'; failure: Failure; notifyCancel: true };

/** An alert only: an event, and the task looked at again a poll interval after `now`. */
export function alertChange(why: string, now: number, pollIntervalMs: number): Change {
  return {
    patch: { dueAt: now + pollIntervalMs, owner: null, leaseUntil: null },
    reason: `alert: ${why}`,
    note: true,
  };
}

export function decideTimeout(
  policy: TimeoutPolicy,
  why: string,
  code: 'deadline_timeout' | 'heartbeat_timeout',
  now: number,
  pollIntervalMs: number,
): TimeoutPlan {
  if (policy === 'alert')
    return { kind: 'alert', why, change: alertChange(why, now, pollIntervalMs) };
  return {
    kind: 'fail',
    notifyCancel: true,
    failure: { why, retryable: policy === 'retry', drop: true, code },
  };
}

/** The worker's view of the attempt, as its query and heartbeat answers give it. */
export interface WorkerView {
  attempt: number;
  task_status: TaskStatus;
  result?: Record<string, unknown> | null;
  error?: { message: string; code?: string | null } | null;
  progress?: { percent: number; step: string | null; message: string | null } | null;
}
export interface HeartbeatView {
  alive: boolean;
  task_status?: TaskStatus;
  execution_lost?: boolean;
}

/** What the worker said when polled: its query answer (none: it does not know the task), its heartbeat. */
export type Seen =
  | { kind: 'before-query' }
  | { kind: 'query'; task: WorkerView | undefined }
  | { kind: 'heartbeat'; task: WorkerView; heartbeat: HeartbeatView }
  | { kind: 'unreachable'; error: string };

export type PollPlan =
  /** Nothing decided yet: ask the worker (its query, then its heartbeat). */
  | { kind: 'ask'; what: 'query' | 'heartbeat' }
  /** The run passed its deadline: tell the worker, then the timeout under its policy. */
  | { kind: 'deadline'; timeout: TimeoutPlan; notifyDeadline: true }
  /** No heartbeat for too long: the timeout under its policy. */
  | { kind: 'heartbeat-timeout'; timeout: TimeoutPlan }
  /** Send the run call again (`create`: the create-and-run call) to the worker that has the attempt. */
  | { kind: 'resume-run'; create: boolean }
  /** The worker does not have the attempt: re-create it or adopt its word (WorkerStateAdoption). */
  | { kind: 'worker-lost'; why: string }
  /** The worker has the outcome: write it. */
  | { kind: 'outcome'; outcome: TaskStatus.SUCCESS | TaskStatus.FAIL }
  /** The run died with an earlier process of the worker: recover (decideRecovery). */
  | { kind: 'recover'; why: string }
  /** Still running (or the worker was not reached in time): look again after a poll interval. */
  | { kind: 'again'; change: Change };

/**
 * A RUNNING task is due. The worker's word first: an outcome it has is the outcome, even when it
 * came after the deadline (the work was done or failed; a "failed" for work that happened is
 * worse than late). Then the deadline (a sync run has one even without a deadline: the bound its
 * run call got), when the worker has no outcome; then its heartbeat. A worker that cannot be
 * reached is failed by the heartbeat timeout alone: what became of its run is not known.
 */
export function decidePoll(
  t: TaskModel,
  type: TaskTypeModel,
  seen: Seen,
  now: number,
  pollIntervalMs: number,
  createsAndRuns: boolean,
): PollPlan {
  const deadlineS = deadlineSeconds(t, type);
  const pastDeadline: PollPlan | undefined =
    deadlineS !== null && t.startedAt !== null && now - t.startedAt > deadlineS * 1000
      ? {
          kind: 'deadline',
          notifyDeadline: true,
          timeout: decideTimeout(
            type.timeoutPolicy.deadline,
            `ran past its deadline of ${deadlineS} s`,
            'deadline_timeout',
            now,
            pollIntervalMs,
          ),
        }
      : undefined;
  const again = (reason: string, patch: TaskPatch = {}): PollPlan => ({
    kind: 'again',
    change: {
      patch: { ...patch, dueAt: now + pollIntervalMs, owner: null, leaseUntil: null },
      reason,
    },
  });
  switch (seen.kind) {
    case 'before-query':
      return { kind: 'ask', what: 'query' };
    case 'unreachable': {
      // Not the deadline: the run may have ended either way, and nothing can be told to stop. An
      // unreachable worker is given up on only past the heartbeat timeout.
      const lastBeat = t.heartbeatAt ?? t.startedAt ?? now;
      if (now - lastBeat > type.heartbeatTimeoutMs) {
        // A worker that never came back: its type says whether the attempt may run elsewhere.
        // Not a task with lock keys: the lost run may still hold its resources, and a new attempt
        // would free them (by its state) to other tasks while it goes on.
        if (type.onWorkerLost === 'recover' && t.lockKeys.length === 0)
          return {
            kind: 'recover',
            why: `worker ${t.workerId ?? '?'} of attempt ${t.attempt} unreachable for ${now - lastBeat} ms (${seen.error}); the type recovers a lost worker's attempts (on_worker_lost: recover)`,
          };
        return {
          kind: 'heartbeat-timeout',
          timeout: decideTimeout(
            type.timeoutPolicy.heartbeat,
            `worker unreachable and no heartbeat for ${now - lastBeat} ms: ${seen.error}`,
            'heartbeat_timeout',
            now,
            pollIntervalMs,
          ),
        };
      }
      return again('poll failed');
    }
    case 'query': {
      const task = seen.task;
      const held = task !== undefined && task.attempt === t.attempt;
      if (held && (task.task_status === TaskStatus.SUCCESS || task.task_status === TaskStatus.FAIL))
        return { kind: 'outcome', outcome: task.task_status };
      if (pastDeadline) return pastDeadline;
      // Created and run in one call that never reached the worker (the scheduler died first).
      if (!task && createsAndRuns) return { kind: 'resume-run', create: true };
      if (!task) return { kind: 'worker-lost', why: 'the worker does not know the task' };
      if (task.attempt !== t.attempt)
        return {
          kind: 'worker-lost',
          why: `the worker has attempt ${task.attempt}, not ${t.attempt}`,
        };
      // RUNNING here but the run call never reached the worker (the scheduler that sent it died
      // between its RUNNING write and the call): the attempt has not started there, so run it.
      if (task.task_status === TaskStatus.CREATE || task.task_status === TaskStatus.PREPARE)
        return { kind: 'resume-run', create: false };
      return { kind: 'ask', what: 'heartbeat' };
    }
    case 'heartbeat': {
      const { task, heartbeat: hb } = seen;
      // The worker holds the attempt as RUNNING, but the run died with an earlier process of it:
      // nothing will report an outcome. Recovered now, not after the heartbeat timeout; a run
      // that is only late to beat (alive false, not lost) waits for it.
      if (
        hb.execution_lost === true &&
        !hb.alive &&
        hb.task_status === TaskStatus.RUNNING &&
        task.task_status === TaskStatus.RUNNING
      ) {
        return {
          kind: 'recover',
          why: `worker ${t.workerId ?? '?'} holds attempt ${t.attempt} as RUNNING but its execution was lost (the worker restarted)`,
        };
      }
      const lastBeat = hb.alive ? now : (t.heartbeatAt ?? t.startedAt ?? now);
      if (
        !hb.alive &&
        task.task_status === TaskStatus.RUNNING &&
        now - lastBeat > type.heartbeatTimeoutMs
      ) {
        return {
          kind: 'heartbeat-timeout',
          timeout: decideTimeout(
            type.timeoutPolicy.heartbeat,
            `no heartbeat for ${now - lastBeat} ms`,
            'heartbeat_timeout',
            now,
            pollIntervalMs,
          ),
        };
      }
      const patch: TaskPatch = {};
      if (hb.alive) patch.heartbeatAt = now;
      if (task.progress)
        patch.progress = {
          percent: task.progress.percent,
          step: task.progress.step,
          message: task.progress.message,
        };
      return again('polled', patch);
    }
  }
}
