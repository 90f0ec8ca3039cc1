import { Inject, Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BlockingKind,
  ContractCall,
  ContractErrorCode,
  ContractException,
  NotifyEvent,
  RepetitionKind,
  TaskNotFoundError,
  TaskStatus,
  WorkerClient,
  canTransition,
} from '@baton/task-contract';
import { Clock, IdGenerator } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { QueueLanes } from '../queue';
import { RunnerService } from '../runner';
import { WORKER_CLIENT } from '../engine';
import { TaskTypesService } from '../task-types';
import { WorkersService } from '../workers';
import { CreateTaskDto } from './dto/create-task.dto';
import { ListTasksQuery } from './dto/list-tasks.query';
import {
  TaskAttemptModel,
  TaskEventModel,
  TaskModel,
  TaskPatch,
  TaskChange,
  TaskLogRepository,
  TasksRepository,
} from '../task-store';

const MAX_PARAMS_BYTES = 64 * 1024;
const ACTOR = 'api';
/** How long a cancel of a driven run tells a worker again that does not know the task yet. */
const CANCEL_NOTIFY_WAIT_MS = 2000;
const CANCEL_NOTIFY_AGAIN_MS = 20;

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

function illegal(what: string, t: TaskModel): ContractException {
  return new ContractException(
    ContractErrorCode.ILLEGAL_TRANSITION,
    `cannot ${what} a task in ${t.status}${t.outcome ? ` (${t.outcome})` : ''}`,
    { task_id: t.taskId, status: t.status },
  );
}

/**
 * The rules of the public task API: what may be created, and which actions are allowed from which
 * status (the transition table decides). Every change is a compare-and-set; a task being driven
 * by a runner at that moment answers 409 VERSION_CONFLICT, and the caller tries again.
 */
@Injectable()
export class TasksService {
  constructor(
    private readonly repo: TasksRepository,
    private readonly log: TaskLogRepository,
    private readonly types: TaskTypesService,
    private readonly workers: WorkersService,
    private readonly runner: RunnerService,
    private readonly ids: IdGenerator,
    private readonly clock: Clock,
    private readonly lanes: QueueLanes,
    @Inject(WORKER_CLIENT) private readonly client: WorkerClient,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  /** Creates one task; a repeated idempotency_key answers the existing task. */
  async create(
    dto: CreateTaskDto,
    opts: { repetition?: RepetitionKind; actor?: string } = {},
  ): Promise<{ task: TaskModel; created: boolean }> {
    const tenant = dto.tenant ?? 'default';
    if (dto.idempotency_key) {
      const existing = await this.repo.findByIdempotencyKey(tenant, dto.idempotency_key);
      if (existing) return { task: existing, created: false };
    }
    const task = await this.build(dto, this.clock.now(), opts.repetition);
    try {
      await this.repo.insert(task, 'created', opts.actor ?? ACTOR);
    } catch (err) {
      // Two creates with one key raced: the loser answers the winner's task.
      if (
        dto.idempotency_key &&
        err instanceof ContractException &&
        err.code === ContractErrorCode.CREATE_CONFLICT
      ) {
        const winner = await this.repo.findByIdempotencyKey(tenant, dto.idempotency_key);
        if (winner) return { task: winner, created: false };
      }
      throw err;
    }
    await this.enqueue([task]);
    return { task, created: true };
  }

  /** Checks a create body as `create` would (type registered, http_url, params, labels), writing nothing. */
  async check(dto: CreateTaskDto, repetition?: RepetitionKind): Promise<void> {
    await this.build(dto, this.clock.now(), repetition);
  }

  /** Creates every task or none (validated first, inserted in one transaction). */
  async createBatch(dtos: CreateTaskDto[]): Promise<TaskModel[]> {
    const now = this.clock.now();
    const keys = dtos
      .filter((d) => d.idempotency_key)
      .map((d) => `${d.tenant ?? 'default'}/${d.idempotency_key}`);
    if (new Set(keys).size !== keys.length) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        'two tasks of the batch share an idempotency_key',
      );
    }
    const tasks: TaskModel[] = [];
    for (const [i, dto] of dtos.entries()) {
      try {
        tasks.push(await this.build(dto, now));
      } catch (err) {
        if (err instanceof ContractException)
          throw new ContractException(err.code, `tasks[${i}]: ${err.message}`, err.data);
        throw err;
      }
    }
    await this.repo.insertMany(tasks, 'created (batch)', ACTOR);
    await this.enqueue(tasks);
    return tasks;
  }

  async get(taskId: string): Promise<TaskModel> {
    const t = await this.repo.findById(taskId);
    if (!t)
      throw new ContractException(
        ContractErrorCode.TASK_NOT_FOUND,
        `task ${taskId} does not exist`,
        { task_id: taskId },
      );
    return t;
  }

  async list(q: ListTasksQuery): Promise<{ items: TaskModel[]; nextCursor: string | null }> {
    const limit = q.limit ?? 50;
    const [key, ...rest] = q.label ? q.label.split(':') : [];
    const items = await this.repo.list(
      {
        taskType: q.task_type,
        status: q.status,
        tenant: q.tenant,
        label: q.label ? { key, value: rest.join(':') } : undefined,
        createdFrom: q.created_from ? Date.parse(q.created_from) : undefined,
        createdTo: q.created_to ? Date.parse(q.created_to) : undefined,
      },
      q.cursor,
      limit + 1,
    );
    const more = items.length > limit;
    const page = more ? items.slice(0, limit) : items;
    return { items: page, nextCursor: more ? page[page.length - 1].taskId : null };
  }

  async events(taskId: string): Promise<TaskEventModel[]> {
    await this.get(taskId);
    return this.log.events(taskId);
  }

  async attempts(taskId: string): Promise<TaskAttemptModel[]> {
    await this.get(taskId);
    return this.log.attempts(taskId);
  }

  // ---- actions ------------------------------------------------------------------------------

  async pause(taskId: string): Promise<TaskModel> {
    const t = await this.free(taskId);
    if (!canTransition(t.status, TaskStatus.PAUSE)) throw illegal('pause', t);
    if (t.status === TaskStatus.RUNNING) {
      const type = await this.types.get(t.taskType);
      if (type.blocking !== BlockingKind.ASYNC || !type.implements.includes(ContractCall.PAUSE)) {
        throw new ContractException(
          ContractErrorCode.NOT_IMPLEMENTED,
          `a running ${t.taskType} task cannot be paused`,
        );
      }
      await this.client.pause(t.workerUrl ?? '', t.taskType, t.taskId, { fence: t.fence });
    }
    return this.change(t, {
      to: TaskStatus.PAUSE,
      patch: { pausedFrom: t.status, dueAt: null },
      reason: 'paused',
    });
  }

  async continue(taskId: string): Promise<TaskModel> {
    const t = await this.free(taskId);
    if (t.status !== TaskStatus.PAUSE) throw illegal('continue', t);
    const back = t.pausedFrom ?? TaskStatus.INIT;
    const now = this.clock.now();
    if (back === TaskStatus.RUNNING) {
      await this.client.continue(t.workerUrl ?? '', t.taskType, t.taskId, { fence: t.fence });
      return this.change(t, {
        to: TaskStatus.RUNNING,
        patch: {
          pausedFrom: null,
          dueAt: now + this.config.checker.pollIntervalMs,
          heartbeatAt: now,
        },
        reason: 'continued',
      });
    }
    const next = await this.change(t, {
      to: back,
      patch: { pausedFrom: null, dueAt: now },
      reason: 'continued',
    });
    await this.enqueue([next]);
    return next;
  }

  /** `actor` names who cancels in the lifecycle log (the API, or the Producer's overlap policy). */
  async cancel(taskId: string, actor = ACTOR): Promise<TaskModel> {
    const current = await this.get(taskId);
    // A run, driven right now or not (a sync run holds its claim until the worker answers): the
    // cancel is recorded beside any driver and the worker told; the run's end is not retried.
    if (current.status === TaskStatus.RUNNING) return this.cancelRun(current, actor);
    const t = await this.free(taskId);
    if (t.status === TaskStatus.SUCCESS && t.pendingAction === 'restart') {
      // A permanent task between two lives: it stops here, through its final clean-up.
      const next = await this.change(
        t,
        {
          patch: {
            cancelRequested: true,
            pendingAction: null,
            outcome: TaskStatus.SUCCESS,
            dueAt: this.clock.now(),
          },
          reason: 'cancelled: the permanent task is not restarted',
        },
        actor,
      );
      await this.enqueue([next]);
      return next;
    }
    if (
      t.status === TaskStatus.FINISH ||
      t.status === TaskStatus.SUCCESS ||
      t.status === TaskStatus.ROLLBACK ||
      t.outcome === TaskStatus.FAIL
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
          { fence: t.fence },
        )
        .catch(() => undefined);
    }
    const next = await this.change(
      t,
      {
        to: TaskStatus.FAIL,
        patch: {
          cancelRequested: true,
          outcome: TaskStatus.FAIL,
          error: { message: 'cancelled', code: 'cancelled' },
          dueAt: this.clock.now(),
        },
        reason: 'cancelled',
      },
      actor,
    );
    await this.enqueue([next]);
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
        await new Promise((r) => setTimeout(r, 25));
      }
    }
  }

  async retry(taskId: string): Promise<TaskModel> {
    const t = await this.free(taskId);
    if (t.status !== TaskStatus.FAIL && t.status !== TaskStatus.NONE) throw illegal('retry', t);
    if (t.cancelRequested) throw illegal('retry a cancelled task; create a new one to', t);
    const next = await this.change(t, {
      patch: { outcome: null, dueAt: this.clock.now() },
      reason: 'retry requested',
    });
    await this.enqueue([next]);
    return next;
  }

  async rollback(taskId: string): Promise<TaskModel> {
    const t = await this.free(taskId);
    if (!canTransition(t.status, TaskStatus.ROLLBACK)) throw illegal('roll back', t);
    const type = await this.types.get(t.taskType);
    if (!type.implements.includes(ContractCall.ROLLBACK)) {
      throw new ContractException(
        ContractErrorCode.NOT_IMPLEMENTED,
        `${t.taskType} workers cannot roll back`,
      );
    }
    const next = await this.change(t, {
      patch: { pendingAction: 'rollback', dueAt: this.clock.now() },
      reason: 'rollback requested',
    });
    await this.enqueue([next]);
    return next;
  }

  async changeParams(taskId: string, params: Record<string, unknown>): Promise<TaskModel> {
    this.checkParamsSize(params);
    const t = await this.free(taskId);
    if (!CHANGEABLE.has(t.status)) throw illegal('change the params of', t);
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
      await this.client.change(t.workerUrl ?? '', t.taskType, t.taskId, params, { fence: t.fence });
    }
    return this.change(t, { patch: { params }, reason: 'params changed' });
  }

  // ---- helpers -----------------------------------------------------------------------------

  private async build(dto: CreateTaskDto, now: number, made?: RepetitionKind): Promise<TaskModel> {
    const info = dto.create_info;
    // A task made by a timer is timed; a body asks for simple or permanent itself.
    if (made !== undefined && dto.repetition !== undefined && dto.repetition !== made) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `a ${made} task cannot be ${dto.repetition}: leave repetition out of the template`,
        { repetition: dto.repetition },
      );
    }
    const repetition = made ?? dto.repetition ?? RepetitionKind.SIMPLE;
    const type = await this.types.find(info.task_type);
    if (!type) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `task type ${info.task_type} is not registered: no worker has declared it`,
        { task_type: info.task_type },
      );
    }
    if (info.http_url && !(await this.workers.isRegisteredUrl(info.task_type, info.http_url))) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `http_url ${info.http_url} is not a registered ${info.task_type} worker`,
        { http_url: info.http_url },
      );
    }
    const params = dto.params ?? {};
    this.checkParamsSize(params);
    for (const [k, v] of Object.entries(dto.labels ?? {})) {
      if (
        typeof v !== 'string' ||
        k.length === 0 ||
        k.length > 100 ||
        v.length > 200 ||
        k.includes(':')
      ) {
        throw new ContractException(
          ContractErrorCode.VALIDATION_FAILED,
          `label ${JSON.stringify(k)} must map a name (no ':') to a string of at most 200 characters`,
        );
      }
    }
    const arg = dto.process_arg ?? {};
    const startTime = arg.start_time ? Date.parse(arg.start_time) : null;
    const initial = arg.task_status ?? TaskStatus.INIT;
    return {
      taskId: this.ids.taskId(),
      taskType: info.task_type,
      taskName: info.task_name,
      tenant: dto.tenant ?? 'default',
      labels: dto.labels ?? {},
      status: initial,
      version: 0,
      attempt: 0,
      priority: info.important_level ?? 5,
      blocking: type.blocking,
      repetition,
      params,
      lockKeys: [...new Set(dto.lock_keys ?? [])].sort(),
      requestedUrl: info.http_url ?? null,
      workerId: null,
      workerUrl: null,
      parentTaskId: info.parent_task_id ?? null,
      controlTaskId: info.control_task_id ?? null,
      startTime,
      deadlineSecond: arg.deadline_second ?? null,
      lockTimeout: arg.lock_timeout ?? null,
      maxRetry: arg.max_retry ?? -1,
      idempotencyKey: dto.idempotency_key ?? null,
      callbackUrl: dto.callback_url ?? null,
      // Due at once even with a later start_time: the engine records POSTPONE until then.
      dueAt: initial === TaskStatus.PAUSE ? null : now,
      owner: null,
      leaseUntil: null,
      fence: 0,
      result: null,
      error: null,
      progress: null,
      heartbeatAt: null,
      outcome: null,
      pausedFrom: initial === TaskStatus.PAUSE ? TaskStatus.INIT : null,
      cancelRequested: false,
      pendingAction: null,
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
    };
  }

  private checkParamsSize(params: Record<string, unknown>): void {
    if (Buffer.byteLength(JSON.stringify(params)) > MAX_PARAMS_BYTES) {
      throw new ContractException(
        ContractErrorCode.PAYLOAD_TOO_LARGE,
        `params must be at most ${MAX_PARAMS_BYTES} bytes of JSON`,
      );
    }
  }

  /**
   * The flag first, then the worker: its FAIL may come back at once, and must find the flag. The
   * flag moves no version, so a runner driving the run keeps its claim and ends it.
   */
  private async cancelRun(t: TaskModel, actor: string): Promise<TaskModel> {
    const recorded = await this.repo.requestCancel(
      t.taskId,
      t.attempt,
      t.fence,
      actor,
      'cancel requested: the worker is told to stop the run, and no retry follows',
      this.clock.now(),
    );
    if (!recorded) {
      throw new ContractException(
        ContractErrorCode.VERSION_CONFLICT,
        `task ${t.taskId} changed meanwhile; read it again and retry`,
        { task_id: t.taskId },
      );
    }
    // The RUNNING write goes before the run call: a worker that does not know the task yet is
    // told again for a moment, until the call has reached it.
    const tellUntil = this.clock.now() + CANCEL_NOTIFY_WAIT_MS;
    for (;;) {
      try {
        await this.client.notify(
          t.workerUrl ?? '',
          t.taskType,
          t.taskId,
          { event: NotifyEvent.CANCEL, message: 'cancelled by request' },
          { fence: t.fence },
        );
        break;
      } catch (err) {
        if (err instanceof TaskNotFoundError && this.clock.now() < tellUntil) {
          await sleep(CANCEL_NOTIFY_AGAIN_MS);
          continue;
        }
        throw new ContractException(
          ContractErrorCode.WORKER_UNAVAILABLE,
          `cancel recorded (the task will not be retried), but worker ${t.workerId ?? '?'} could not be told to stop the run: ${err instanceof Error ? err.message : String(err)}`,
          { task_id: t.taskId, cancel_requested: true },
        );
      }
    }
    return this.get(t.taskId);
  }

  /** The task, when no runner holds its claim right now (else 409: try again in a moment). */
  private async free(taskId: string): Promise<TaskModel> {
    const t = await this.get(taskId);
    if (t.owner !== null && (t.leaseUntil ?? 0) > this.clock.now()) {
      throw new ContractException(
        ContractErrorCode.VERSION_CONFLICT,
        `task ${taskId} is being driven by ${t.owner}; try again shortly`,
        { task_id: taskId },
      );
    }
    return t;
  }

  /** An action of the API: every one is logged, a request that moves no status too (a note). */
  private async change(
    t: TaskModel,
    change: Omit<TaskChange, 'actor'> & { patch?: TaskPatch },
    actor = ACTOR,
  ): Promise<TaskModel> {
    const next = await this.repo.apply(t, { ...change, actor, note: true }, this.clock.now());
    if (!next) {
      throw new ContractException(
        ContractErrorCode.VERSION_CONFLICT,
        `task ${t.taskId} changed meanwhile; read it again and retry`,
        { task_id: t.taskId },
      );
    }
    return next;
  }

  /** The fast path: due tasks go straight into the queue; the Dispatcher covers the rest. */
  private async enqueue(tasks: readonly TaskModel[]): Promise<void> {
    const now = this.clock.now();
    const due = tasks.filter(
      (t) => t.dueAt !== null && t.dueAt <= now + this.config.dispatcher.intervalMs,
    );
    if (due.length === 0) return;
    try {
      await this.lanes.enqueue(due);
      this.runner.nudge();
    } catch {
      // The queue is only a fast path: the task is stored, and the Dispatcher will find it.
    }
  }
}
