import { Clock } from '@baton/time';
import {
  ContractErrorCode,
  ContractException,
  IllegalTransitionError,
  RepetitionKind,
  TaskStatus,
  WorkerClient,
} from '@baton/task-contract';
import { TaskLog } from '../common';
import { TaskModel } from '../task-store';

/**
 * Tells the worker to pause or continue a run. A worker that is there already counts as told: an
 * earlier request told it and then lost the race to record it (or its scheduler died between
 * the two), and without this the row and the worker would disagree for good, every retry refused.
 */
export async function tellRun(
  client: WorkerClient,
  t: TaskModel,
  action: 'pause' | 'continue',
): Promise<void> {
  const url = t.workerUrl ?? '';
  try {
    await client[action](url, t.taskType, t.taskId, {
      fence: t.fence,
      traceparent: TaskLog.traceparent(t.taskId, t.attempt),
    });
  } catch (err) {
    if (!(err instanceof IllegalTransitionError)) throw err;
    const there = action === 'pause' ? TaskStatus.PAUSE : TaskStatus.RUNNING;
    const now = await client.status(url, t.taskType, t.taskId, {
      fence: t.fence,
      traceparent: TaskLog.traceparent(t.taskId, t.attempt),
    });
    if (now.task_status !== there || now.attempt !== t.attempt) throw err;
  }
}

/** How long a change the worker has made already is tried again against a moving row. */
const RECORD_WITHIN_MS = 3000;

/**
 * Records what the worker has done already (a pause, a continue, new params): tried again over
 * the fresh row while a runner's poll moves its version, as long as the run is the same one.
 */
export async function recordAfterRun(
  t: TaskModel,
  apply: (current: TaskModel) => Promise<TaskModel>,
  reread: (taskId: string) => Promise<TaskModel>,
  clock: Clock,
): Promise<TaskModel> {
  const until = clock.now() + RECORD_WITHIN_MS;
  let current = t;
  for (;;) {
    try {
      return await apply(current);
    } catch (err) {
      const moved =
        err instanceof ContractException && err.code === ContractErrorCode.VERSION_CONFLICT;
      if (!moved || clock.now() >= until) throw err;
      await clock.sleep(25);
      const fresh = await reread(t.taskId);
      if (fresh.status !== t.status || fresh.attempt !== t.attempt) throw err;
      current = fresh;
    }
  }
}

export function illegal(what: string, t: TaskModel): ContractException {
  return new ContractException(
    ContractErrorCode.ILLEGAL_TRANSITION,
    `cannot ${what} a task in ${t.status}${t.outcome ? ` (${t.outcome})` : ''}`,
    { task_id: t.taskId, status: t.status },
  );
}

/** A topology run's centre task moves with its run: its controls are the run's (409 here). */
export function notCentre(t: TaskModel): TaskModel {
  if (t.repetition !== RepetitionKind.TOPOLOGY) return t;
  throw new ContractException(
    ContractErrorCode.ILLEGAL_TRANSITION,
    `task ${t.taskId} is the centre task of a topology run: act on the run (/v1/topology-runs/${t.taskId})`,
    { task_id: t.taskId, run_id: t.taskId },
  );
}
