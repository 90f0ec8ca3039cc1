import { Inject, Injectable } from '@nestjs/common';
import {
  CANCELLED_OUTCOME,
  BlockingKind,
  ContractCall,
  ContractErrorCode,
  ContractException,
  NotifyEvent,
  StaleFenceError,
  TaskNotFoundError,
  TaskStatus,
  WorkerClient,
  canTransition,
} from '@baton/task-contract';
import { Clock, TaskLog } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { WORKER_CLIENT } from '../engine';
import { TaskModel, TasksRepository } from '../task-store';
import { TaskTypesService } from '../task-types';
import { ActionSteps } from './action-steps';
import { FastEnqueue } from './fast-enqueue';
import { OutcomeActions } from './outcome-actions';
import { illegal, notCentre, recordAfterRun, tellRun } from './run-control';
import { TaskFactory } from './task-factory';
import { TasksService } from './tasks.service';

const ACTOR = 'api';
/** How long a cancel of a driven run tells a worker again that does not know the task yet. */
const CANCEL_NOTIFY_WAIT_MS = 2000;
const CANCEL_NOTIFY_AGAIN_MS = 20;
/** Statuses a cancelled task passes through on its way to FINISH. */
const ENDING: ReadonlySet<TaskStatus> = new Set([
  TaskStatus.FAIL,
  TaskStatus.ROLLBACK,
  TaskStatus.SUCCESS,
]);
/** Looks at a run that ended under a cancel this many times before answering 409. */
const CANCEL_TRIES = 3;

/** Statuses in which params may still change. */
const CHANGEABLE: ReadonlySet<TaskStatus> = new Set([
  TaskStatus.INIT,
  TaskStatus.POSTPONE,
  TaskStatus.CREATE,
  TaskStatus.PREPARE,
  TaskStatus.RUNNING,
  TaskStatus.PAUSE,
  TaskStatus.NONE,
]);

/**
 * What people (and the Producer) may do to a task: pause, continue, cancel, retry, roll back,
 * change params. The transition table decides what is allowed from which status. Every change is
 * a compare-and-set; a task being driven by a runner at that moment answers 409 VERSION_CONFLICT,
 * and the caller tries again.
 */
@Injectable()
export class TaskActionsService {
  constructor(
    private readonly repo: TasksRepository,
    private readonly steps: ActionSteps,
    private readonly outcomes: OutcomeActions,
    private readonly tasks: TasksService,
    private readonly types: TaskTypesService,
    private readonly factory: TaskFactory,
    private readonly fast: FastEnqueue,
    private readonly clock: Clock,
    @Inject(WORKER_CLIENT) private readonly client: WorkerClient,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  async pause(taskId: string, actor = ACTOR): Promise<TaskModel> {
    const t = await this.steps.free(taskId);
    if (!canTransition(t.status, TaskStatus.PAUSE)) throw illegal('pause', t);
    if (t.status === TaskStatus.RUNNING) {
      const type = await this.types.get(t.taskType);
      if (type.blocking !== BlockingKind.ASYNC || !type.implements.includes(ContractCall.PAUSE)) {
        throw new ContractException(
          ContractErrorCode.NOT_IMPLEMENTED,
          `a running ${t.taskType} task cannot be paused`,
        );
      }
      await tellRun(this.client, t, 'pause');
    }
    const paused = (c: TaskModel) =>
      this.steps.change(
        c,
        { to: TaskStatus.PAUSE, patch: { pausedFrom: c.status, dueAt: null }, reason: 'paused' },
        actor,
      );
    return t.status === TaskStatus.RUNNING
      ? recordAfterRun(t, paused, (id) => this.tasks.get(id), this.clock)
      : paused(t);
  }

  async continue(taskId: string, actor = ACTOR): Promise<TaskModel> {
    const t = await this.steps.free(taskId);
    if (t.status !== TaskStatus.PAUSE) throw illegal('continue', t);
    const back = t.pausedFrom ?? TaskStatus.INIT;
    const now = this.clock.now();
    if (back === TaskStatus.RUNNING) {
      await tellRun(this.client, t, 'continue');
      const running = (c: TaskModel) =>
        this.steps.change(
          c,
          {
            to: TaskStatus.RUNNING,
            patch: {
              pausedFrom: null,
              dueAt: now + this.config.checker.pollIntervalMs,
              heartbeatAt: now,
            },
            reason: 'continued',
          },
          actor,
        );
      return recordAfterRun(t, running, (id) => this.tasks.get(id), this.clock);
    }
    const next = await this.steps.change(
      t,
      {
        to: back,
        patch: { pausedFrom: null, dueAt: now },
        reason: 'continued',
      },
      actor,
    );
    await this.fast.enqueue([next]);
    return next;
  }

  /** `actor` names who cancels in the lifecycle log (the API, or the Producer's overlap policy). */
  async cancel(taskId: string, actor = ACTOR): Promise<TaskModel> {
    let current = notCentre(await this.tasks.get(taskId));
    // A run, driven right now or not (a sync run holds its claim until the worker answers): the
    // cancel is recorded beside any driver and the worker told; the run's end is not retried.
    // A run that ended meanwhile is looked at again (its end may be this very cancel).
    for (let tries = 1; current.status === TaskStatus.RUNNING; tries++) {
      const cancelled = await this.cancelRun(current, actor, tries >= CANCEL_TRIES);
      if (cancelled) return cancelled;
      current = await this.tasks.get(taskId);
    }
    // Cancelled before, and ending under it (its run may be stopping right now): the same answer
    // again, and nothing written. A finished task refuses it, as any other; a task paused since
    // (its worker could not be told) is cancelled again below.
    if (current.cancelRequested && ENDING.has(current.status)) return current;
    try {
      return await this.cancelIdle(taskId, actor);
    } catch (err) {
      // Another cancel of the same task won the compare-and-set: answer as it did.
      const lost =
        err instanceof ContractException && err.code === ContractErrorCode.VERSION_CONFLICT;
      const now = lost ? await this.tasks.get(taskId) : undefined;
      if (now?.cancelRequested && ENDING.has(now.status)) return now;
      throw err;
    }
  }

  /** The cancel of a task no run holds: to FAIL (or a permanent task's last end), the worker told. */
  private async cancelIdle(taskId: string, actor: string): Promise<TaskModel> {
    const t = await this.steps.free(taskId);
    if (t.status === TaskStatus.SUCCESS && t.pendingAction === 'restart') {
      // A permanent task between two lives: it stops here, through its final clean-up.
      const next = await this.steps.change(
        t,
        {
          patch: {
            cancelRequested: true,
            pendingAction: null,
            outcome: CANCELLED_OUTCOME,
            dueAt: this.clock.now(),
          },
          reason: 'cancelled: the permanent task is not restarted',
        },
        actor,
      );
      await this.fast.enqueue([next]);
      return next;
    }
    if (
      t.status === TaskStatus.FINISH ||
      t.status === TaskStatus.SUCCESS ||
      t.status === TaskStatus.ROLLBACK ||
      (t.status === TaskStatus.FAIL && t.outcome !== null)
    ) {
      throw illegal('cancel', t);
    }
    if (
      t.workerUrl &&
      (t.status === TaskStatus.CREATE ||
        t.status === TaskStatus.PREPARE ||
        t.status === TaskStatus.PAUSE)
    ) {
      await this.client
        .notify(
          t.workerUrl,
          t.taskType,
          t.taskId,
          { event: NotifyEvent.CANCEL },
          {
            fence: t.fence,
            traceparent: TaskLog.traceparent(t.taskId, t.attempt),
          },
        )
        .catch(() => undefined);
    }
    const next = await this.steps.change(
      t,
      {
        to: TaskStatus.FAIL,
        patch: {
          cancelRequested: true,
          outcome: CANCELLED_OUTCOME,
          error: { message: 'cancelled', code: 'cancelled' },
          dueAt: this.clock.now(),
        },
        reason: 'cancelled',
      },
      actor,
    );
    await this.fast.enqueue([next]);
    return next;
  }

  /**
   * Cancels on behalf of the scheduler itself (a timer's policy or change). A task being driven
   * answers 409 for a moment, so the cancel is tried again until `withinMs` has passed; any
   * other refusal, or running out of time, is thrown.
   */
  async cancelWhenFree(taskId: string, actor: string, withinMs: number): Promise<TaskModel> {
    const until = this.clock.now() + withinMs;
    for (;;) {
      try {
        return await this.cancel(taskId, actor);
      } catch (err) {
        const busy =
          err instanceof ContractException && err.code === ContractErrorCode.VERSION_CONFLICT;
        if (!busy || this.clock.now() >= until) throw err;
        await this.clock.sleep(25);
      }
    }
  }

  retry(taskId: string, actor = ACTOR): Promise<TaskModel> {
    return this.outcomes.retry(taskId, actor);
  }

  rollback(taskId: string, actor = ACTOR): Promise<TaskModel> {
    return this.outcomes.rollback(taskId, actor);
  }

  rerun(
    taskId: string,
    params?: Record<string, unknown>,
    actor = ACTOR,
    fromAttempt?: number,
    checkSchema = true,
  ): Promise<TaskModel> {
    return this.outcomes.rerun(taskId, params, actor, fromAttempt, checkSchema);
  }

  async changeParams(
    taskId: string,
    params: Record<string, unknown>,
    actor = ACTOR,
  ): Promise<TaskModel> {
    this.factory.checkParamsSize(params);
    const t = await this.steps.free(taskId);
    if (!CHANGEABLE.has(t.status)) throw illegal('change the params of', t);
    this.types.checkParams(await this.types.get(t.taskType), params);
    const workerHasIt =
      t.workerUrl &&
      [TaskStatus.CREATE, TaskStatus.PREPARE, TaskStatus.RUNNING, TaskStatus.PAUSE].includes(
        t.status,
      );
    if (workerHasIt) {
      const type = await this.types.get(t.taskType);
      if (!type.implements.includes(ContractCall.CHANGE)) {
        throw new ContractException(
          ContractErrorCode.NOT_IMPLEMENTED,
          `${t.taskType} workers cannot change a task they already have`,
        );
      }
      await this.client.change(t.workerUrl ?? '', t.taskType, t.taskId, params, {
        fence: t.fence,
        traceparent: TaskLog.traceparent(t.taskId, t.attempt),
      });
      return recordAfterRun(
        t,
        (c) => this.steps.change(c, { patch: { params }, reason: 'params changed' }, actor),
        (id) => this.tasks.get(id),
        this.clock,
      );
    }
    return this.steps.change(t, { patch: { params }, reason: 'params changed' }, actor);
  }

  /**
   * The task once the cancel of its run is recorded and its worker told; undefined when the run
   * ended meanwhile (unless `last`). The flag first, then the worker: its FAIL may come back at
   * once, and must find the flag. The flag moves no version, so a runner driving the run keeps its
   * claim and ends it. The run is the attempt: status polls claim it again meanwhile, each with a
   * new fence, so the worker is told with the fence read as the flag is written, and again with
   * the newer one while a poll's fence overtakes it.
   */
  private async cancelRun(
    t: TaskModel,
    actor: string,
    last: boolean,
  ): Promise<TaskModel | undefined> {
    const recorded = await this.repo.requestCancel(
      t.taskId,
      t.attempt,
      actor,
      'cancel requested: the worker is told to stop the run, and no retry follows',
      this.clock.now(),
    );
    if (recorded.outcome === 'changed') {
      if (!last) return undefined;
      throw new ContractException(
        ContractErrorCode.VERSION_CONFLICT,
        `task ${t.taskId} changed meanwhile; read it again and retry`,
        { task_id: t.taskId },
      );
    }
    // The RUNNING write goes before the run call: a worker that does not know the task yet is
    // told again for a moment, until the call has reached it.
    const tellUntil = this.clock.now() + CANCEL_NOTIFY_WAIT_MS;
    let fence = recorded.fence ?? t.fence;
    for (;;) {
      try {
        await this.client.notify(
          t.workerUrl ?? '',
          t.taskType,
          t.taskId,
          { event: NotifyEvent.CANCEL, message: 'cancelled by request' },
          { fence, traceparent: TaskLog.traceparent(t.taskId, t.attempt) },
        );
        break;
      } catch (err) {
        if (err instanceof TaskNotFoundError && this.clock.now() < tellUntil) {
          await this.clock.sleep(CANCEL_NOTIFY_AGAIN_MS);
          continue;
        }
        // The worker has heard a newer fence: a poll claimed the run since, or the run ended
        // (maybe under this cancel) and another claim drives the task now.
        if (err instanceof StaleFenceError) {
          const now = await this.tasks.get(t.taskId);
          const sameRun = now.status === TaskStatus.RUNNING && now.attempt === t.attempt;
          if (sameRun && now.fence > fence && this.clock.now() < tellUntil) {
            fence = now.fence;
            continue;
          }
          if (!sameRun) return undefined;
        }
        throw new ContractException(
          ContractErrorCode.WORKER_UNAVAILABLE,
          `cancel recorded (the task will not be retried), but worker ${t.workerId ?? '?'} could not be told to stop the run: ${err instanceof Error ? err.message : String(err)}`,
          { task_id: t.taskId, cancel_requested: true },
        );
      }
    }
    return this.tasks.get(t.taskId);
  }
}
