import { systemClock } from '@baton/time';
import { BlockingKind, RepetitionKind, TaskStatus } from '@baton/task-contract';
import { TaskModel } from '../task.model';
import type { TasksRepository } from '../tasks.repository';

let seq = 0;

/** A task as the API would make it (INIT, due now), with `over` on top: for tests of the store. */
export function newTask(over: Partial<TaskModel> = {}): TaskModel {
  const now = systemClock.now();
  return {
    taskId: `T${now.toString(36)}${(++seq).toString().padStart(6, '0')}`,
    taskType: 'demo.echo',
    taskName: 'n',
    tenant: 'default',
    labels: {},
    status: TaskStatus.INIT,
    version: 0,
    attempt: 0,
    moves: 0,
    priority: 5,
    blocking: BlockingKind.SYNC,
    repetition: RepetitionKind.SIMPLE,
    params: { a: 1, nested: { b: [1, 2] } },
    lockKeys: ['db-1'],
    requestedUrl: null,
    workerId: null,
    workerUrl: null,
    parentTaskId: null,
    controlTaskId: null,
    startTime: null,
    deadlineSecond: null,
    lockTimeout: null,
    maxRetry: 0,
    idempotencyKey: null,
    callbackUrl: null,
    dueAt: now,
    owner: null,
    leaseUntil: null,
    fence: 0,
    result: null,
    error: null,
    progress: null,
    heartbeatAt: null,
    waiting: null,
    outcome: null,
    pausedFrom: null,
    cancelRequested: false,
    pendingAction: null,
    createdAt: now,
    updatedAt: now,
    startedAt: null,
    finishedAt: null,
    ...over,
  };
}

/**
 * A stored task, due at `now`, claimed by `owner` until `leaseUntil` as the runner claims it
 * (owner, lease, a new fence): the row a drive starts from.
 */
export async function insertClaimed(
  tasks: TasksRepository,
  owner: string,
  now: number,
  leaseUntil: number,
): Promise<TaskModel> {
  const t = newTask({ dueAt: now });
  await tasks.insert(t, 'created', 'api');
  const [row] = await tasks.claimMany([t.taskId], owner, now, leaseUntil, [t.status], now);
  if (row?.owner !== owner) throw new Error(`task ${t.taskId} was not claimed by ${owner}`);
  return row;
}
