import { Logger, OnModuleDestroy } from '@nestjs/common';
import { BlockingKind, NotifyEvent } from '../enums/task-kind.enum';
import { ContractCall } from '../enums/task-action.enum';
import { TaskStatus } from '../enums/task-status.enum';
import { ContractErrorCode, ContractException } from '../errors/contract.exception';
import { assertTransition, canTransition } from '../state-machine/transition-table';
import {
  ActionRequestDto,
  ChangeRequestDto,
  CreateTaskRequestDto,
  NotifyRequestDto,
} from '../dto/worker-requests.dto';
import {
  HeartbeatDto,
  ProgressViewDto,
  QueryResultDto,
  StatusDto,
  SummaryDto,
  TaskViewDto,
} from '../dto/worker-responses.dto';
import { KeyedMutex } from '../util/keyed-mutex';
import { validateDto } from '../util/validate';
import { waitUntil } from '../util/wait-until';
import { TaskExecution } from './task-execution';
import {
  RunContext,
  RunLogListener,
  TaskCancelledError,
  TaskHandler,
  TaskSnapshot,
} from './task-handler.interface';
import { TaskRecord, toTaskView } from './task-record';
import { TaskStore } from './stores/task-store.interface';
import { WorkerCallbacks } from './worker-callbacks.interface';

const DEFAULT_HEARTBEAT_TIMEOUT_MS = 15_000;
/** How long a new attempt waits for the previous one to stop after aborting it. */
const SUPERSEDE_WAIT_MS = 2_000;
const QUERY_LIMIT = 100;
/** How long shutdown waits for runs to stop after cancelling them. */
const SHUTDOWN_WAIT_MS = 5_000;

/**
 * create_run waits for a process_arg.start_time at most this far ahead (by this host's clock);
 * one further ahead is taken as clock skew, and the run begins at once.
 */
export const CREATE_RUN_START_WAIT_MAX_MS = 1000;

/** Waits for `at` when that is ahead by at most the maximum; true when it waited. */
async function untilStart(at: number): Promise<boolean> {
  const left = at - Date.now();
  if (!(left > 0) || left > CREATE_RUN_START_WAIT_MAX_MS) return false;
  await waitUntil(at);
  return true;
}

const delay = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms).unref());

/** The PUT actions that change status, as the service names them. */
export type StateAction =
  'running' | 'pause' | 'continue' | 'prepare' | 'rollback' | 'change' | 'clean';

/** Statuses from which `running` may start an execution. */
const RUNNABLE_FROM: ReadonlySet<TaskStatus> = new Set([TaskStatus.CREATE, TaskStatus.PREPARE]);
/** Statuses in which params may still change. */
const CHANGEABLE: ReadonlySet<TaskStatus> = new Set([
  TaskStatus.CREATE,
  TaskStatus.PREPARE,
  TaskStatus.POSTPONE,
  TaskStatus.RUNNING,
  TaskStatus.PAUSE,
]);

/**
 * The worker side of the contract: every rule of ARCHITECTURE.md §4 that does not depend on the
 * task type. Handlers only do the work; this class keeps state, fences, transitions and runs.
 *
 * Concurrency: changing calls for one task run one at a time (KeyedMutex). A run holds no lock
 * while it works; its outcome is written under the lock when it settles. Reads take no lock.
 */
export class TaskWorkerService implements OnModuleDestroy {
  private readonly logger = new Logger('TaskWorker');
  private readonly handlers: ReadonlyMap<string, TaskHandler>;
  private readonly mutex = new KeyedMutex();
  private readonly executions = new Map<string, TaskExecution>();

  constructor(
    handlers: readonly TaskHandler[],
    private readonly store: TaskStore,
    private readonly runLog: RunLogListener | undefined,
    private readonly callbacks: WorkerCallbacks | undefined,
    private readonly clock: () => number = Date.now,
  ) {
    const map = new Map<string, TaskHandler>();
    for (const handler of handlers) {
      if (map.has(handler.type)) {
        throw new ContractException(
          ContractErrorCode.INTERNAL,
          `two handlers for task type ${handler.type}`,
        );
      }
      map.set(handler.type, handler);
    }
    this.handlers = map;
  }

  /**
   * Task types this worker serves, as it declares them to the scheduler. `implements` names the
   * optional calls worth making: those the module answers usefully for every type (change,
   * notify, progress, summary), plus prepare/clean/rollback when the handler has them and
   * pause/continue when a running task can be paused. The scheduler skips the others.
   */
  describe(): { task_type: string; blocking: BlockingKind; implements: ContractCall[] }[] {
    return [...this.handlers.values()].map((h) => {
      const calls: ContractCall[] = [
        ContractCall.CHANGE,
        ContractCall.NOTIFY,
        ContractCall.PROGRESS,
        ContractCall.SUMMARY,
      ];
      if (h.prepare) calls.push(ContractCall.PREPARE);
      if (h.clean) calls.push(ContractCall.CLEAN);
      if (h.rollback) calls.push(ContractCall.ROLLBACK);
      if (h.pausable) calls.push(ContractCall.PAUSE, ContractCall.CONTINUE);
      if (h.blocking === BlockingKind.SYNC && !h.prepare) calls.push(ContractCall.CREATE_RUN);
      return { task_type: h.type, blocking: h.blocking, implements: calls };
    });
  }

  async onModuleDestroy(): Promise<void> {
    for (const execution of this.executions.values()) execution.cancel('worker shutting down');
    // A handler that ignores its abort signal must not hold the shutdown forever.
    await Promise.race([
      Promise.allSettled([...this.executions.values()].map((e) => e.done)),
      delay(SHUTDOWN_WAIT_MS),
    ]);
    await this.store.close();
  }

  // ---- create ---------------------------------------------------------------------------------

  /**
   * create, then run the attempt it created, in one request (a sync type with nothing to
   * prepare). A repeat of an attempt that is already past CREATE answers what is there.
   */
  async createAndRun(taskType: string, fence: number, body: unknown): Promise<TaskViewDto> {
    const handler = this.handlerFor(taskType);
    if (handler.blocking !== BlockingKind.SYNC || handler.prepare) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `${taskType} cannot be created and run in one call: it is async or has a prepare step`,
      );
    }
    const created = await this.create(taskType, fence, body);
    if (created.task_status !== TaskStatus.CREATE) return created;
    // A timed start may be sent a moment early: the run begins on start_time itself.
    const startTime = (body as CreateTaskRequestDto).process_arg?.start_time;
    if (startTime !== undefined && (await untilStart(Date.parse(startTime)))) {
      // Cancelled (or changed) while it waited: answer what is there, as a repeat would.
      const now = await this.find(taskType, created.task_id);
      if (now && now.status !== TaskStatus.CREATE) return toTaskView(now);
    }
    return this.run(handler, taskType, created.task_id, fence);
  }

  async create(taskType: string, fence: number, body: unknown): Promise<TaskViewDto> {
    const handler = this.handlerFor(taskType);
    const req = validateDto(CreateTaskRequestDto, body);
    if (req.create_info.task_type !== taskType) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `create_info.task_type ${req.create_info.task_type} does not match the path's ${taskType}`,
      );
    }
    const attempt = req.attempt ?? 1;
    // Every rule is checked before a running attempt is stopped: a refused create (stale fence,
    // other type, forbidden status) must leave the live run alone.
    for (let pass = 1; ; pass++) {
      const outcome = await this.mutex.run(req.task_id, () =>
        this.createLocked(handler, taskType, fence, req, attempt, pass),
      );
      if (!(outcome instanceof TaskExecution)) return outcome;
      await this.stopSupersededRun(outcome, attempt);
    }
  }

  /** One pass of create under the task's mutex: a view, or the execution to stop first. */
  private async createLocked(
    handler: TaskHandler,
    taskType: string,
    fence: number,
    req: CreateTaskRequestDto,
    attempt: number,
    pass: number,
  ): Promise<TaskViewDto | TaskExecution> {
    {
      const existing = await this.store.get(req.task_id);
      if (existing && existing.task_type !== taskType) {
        throw new ContractException(
          ContractErrorCode.CREATE_CONFLICT,
          `task ${req.task_id} exists with type ${existing.task_type}`,
        );
      }
      if (existing) await this.acceptFence(existing, fence);
      // Idempotent: the same (or an older) attempt answers what is there (a newer fence is kept).
      if (existing && attempt <= existing.attempt) return toTaskView(existing);
      if (existing) {
        assertTransition(existing.status, TaskStatus.CREATE);
        const running = this.executions.get(existing.task_id);
        if (running && pass === 1) return running;
        if (running) {
          throw new ContractException(
            ContractErrorCode.ILLEGAL_TRANSITION,
            `attempt ${existing.attempt} of task ${existing.task_id} is still running`,
          );
        }
      }
      const now = this.isoNow();
      const record: TaskRecord = {
        task_id: req.task_id,
        task_type: taskType,
        task_name: req.create_info.task_name,
        status: TaskStatus.CREATE,
        attempt,
        fence,
        create_info: { ...req.create_info },
        process_arg: { ...(req.process_arg ?? {}) },
        params: req.params ?? {},
        lock_keys: req.lock_keys ?? [],
        progress: { percent: 0, step: null, message: null, updated_at: null },
        heartbeat_at: null,
        result: null,
        error: null,
        paused_from: null,
        created_at: existing?.created_at ?? now,
        updated_at: now,
      };
      await handler.create(this.snapshot(record));
      await this.store.save(record);
      return toTaskView(record);
    }
  }

  // ---- reads ----------------------------------------------------------------------------------

  async query(
    taskType: string,
    taskId: string | undefined,
    taskName: string | undefined,
  ): Promise<QueryResultDto> {
    this.handlerFor(taskType);
    if (!taskId && !taskName) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        'query needs task_id or task_name',
      );
    }
    let records: TaskRecord[];
    if (taskId) {
      const found = await this.store.get(taskId);
      records = found ? [found] : [];
    } else {
      records = await this.store.findByName(taskName as string, QUERY_LIMIT);
    }
    const items = records
      .filter((r) => r.task_type === taskType && (!taskName || r.task_name === taskName))
      .map(toTaskView);
    return { items };
  }

  async status(taskType: string, taskId: string): Promise<StatusDto> {
    this.handlerFor(taskType);
    const record = await this.find(taskType, taskId);
    if (!record) return { task_id: taskId, task_status: TaskStatus.NONE, attempt: 0 };
    return { task_id: taskId, task_status: record.status, attempt: record.attempt };
  }

  async heartbeat(taskType: string, taskId: string): Promise<HeartbeatDto> {
    const handler = this.handlerFor(taskType);
    const record = await this.find(taskType, taskId);
    if (!record)
      return { task_id: taskId, alive: false, task_status: TaskStatus.NONE, heartbeat_at: null };
    const window = handler.heartbeatTimeoutMs ?? DEFAULT_HEARTBEAT_TIMEOUT_MS;
    const execution = this.executions.get(taskId);
    const beat = record.heartbeat_at ? Date.parse(record.heartbeat_at) : 0;
    // Alive means: an execution of the current attempt exists in this process and beat recently.
    // After a worker restart the record may say RUNNING, but nothing runs: not alive.
    const alive =
      execution !== undefined &&
      execution.attempt === record.attempt &&
      this.clock() - beat <= window;
    return {
      task_id: taskId,
      alive,
      task_status: record.status,
      heartbeat_at: record.heartbeat_at,
    };
  }

  async progress(taskType: string, taskId: string): Promise<ProgressViewDto> {
    const handler = this.handlerFor(taskType);
    const record = await this.require(taskType, taskId);
    if (handler.progress) {
      const p = await handler.progress(this.snapshot(record));
      return {
        task_id: taskId,
        task_status: record.status,
        percent: p.percent,
        step: p.step ?? null,
        message: p.message ?? null,
        updated_at: this.isoNow(),
      };
    }
    return { task_id: taskId, task_status: record.status, ...record.progress };
  }

  async summary(taskType: string, taskId: string): Promise<SummaryDto> {
    const handler = this.handlerFor(taskType);
    const record = await this.require(taskType, taskId);
    const summary = handler.summary
      ? await handler.summary(this.snapshot(record))
      : defaultSummary(record);
    return {
      task_id: taskId,
      task_status: record.status,
      summary,
      result: record.result,
      error: record.error,
    };
  }

  // ---- notify ---------------------------------------------------------------------------------

  async notify(
    taskType: string,
    taskId: string,
    fence: number,
    body: unknown,
  ): Promise<TaskViewDto> {
    const handler = this.handlerFor(taskType);
    const req = validateDto(NotifyRequestDto, body);
    return this.mutex.run(taskId, async () => {
      const record = await this.require(taskType, taskId);
      await this.acceptFence(record, fence);
      if (handler.notify) await handler.notify(this.snapshot(record), req.event, req.data);
      if (req.event === NotifyEvent.CANCEL || req.event === NotifyEvent.DEADLINE) {
        const reason =
          req.event === NotifyEvent.DEADLINE ? 'deadline exceeded' : (req.message ?? 'cancelled');
        const execution = this.executions.get(taskId);
        if (execution) {
          // The outcome (FAIL) is written when the run actually stops, never before: until then
          // it still runs, and a new attempt must not start beside it.
          execution.cancel(reason);
        } else if (canTransition(record.status, TaskStatus.FAIL)) {
          this.move(record, TaskStatus.FAIL);
          record.error = { message: reason, code: req.event };
        }
      }
      await this.save(record);
      return toTaskView(record);
    });
  }

  // ---- changing actions -----------------------------------------------------------------------

  async act(
    taskType: string,
    action: StateAction,
    taskId: string,
    fence: number,
    body: unknown,
  ): Promise<TaskViewDto> {
    const handler = this.handlerFor(taskType);
    if (action === 'change') {
      const req = validateDto(ChangeRequestDto, body);
      return this.locked(taskType, taskId, fence, (r) => this.change(handler, r, req.params));
    }
    validateDto(ActionRequestDto, body);
    switch (action) {
      case 'running':
        return this.run(handler, taskType, taskId, fence);
      case 'prepare':
        return this.locked(taskType, taskId, fence, (r) => this.prepare(handler, r));
      case 'pause':
        return this.locked(taskType, taskId, fence, (r) => this.pause(handler, r));
      case 'continue':
        return this.locked(taskType, taskId, fence, (r) => this.continue(handler, r));
      case 'rollback':
        return this.locked(taskType, taskId, fence, (r) => this.rollback(handler, r));
      case 'clean':
        return this.locked(taskType, taskId, fence, (r) => this.clean(handler, r));
    }
  }

  private async prepare(handler: TaskHandler, record: TaskRecord): Promise<void> {
    assertTransition(record.status, TaskStatus.PREPARE);
    try {
      await handler.prepare?.(this.snapshot(record));
      this.move(record, TaskStatus.PREPARE);
    } catch (err) {
      if (err instanceof ContractException) throw err;
      // Preconditions not met is an outcome of the call, not a broken call.
      this.move(record, TaskStatus.FAIL);
      record.error = { message: `prepare failed: ${errorMessage(err)}`, code: 'prepare' };
    }
  }

  private async pause(handler: TaskHandler, record: TaskRecord): Promise<void> {
    assertTransition(record.status, TaskStatus.PAUSE);
    const execution = this.executions.get(record.task_id);
    if (execution && !handler.pausable) {
      throw new ContractException(
        ContractErrorCode.NOT_IMPLEMENTED,
        `task type ${handler.type} cannot pause a running task`,
      );
    }
    const from = record.status;
    this.move(record, TaskStatus.PAUSE);
    // The hook may refuse; only once it has agreed does anything outside the record change.
    await handler.pause?.(this.snapshot(record));
    record.paused_from = from;
    execution?.pause();
  }

  private async continue(handler: TaskHandler, record: TaskRecord): Promise<void> {
    if (record.status !== TaskStatus.PAUSE) {
      throw new ContractException(
        ContractErrorCode.ILLEGAL_TRANSITION,
        `continue needs a paused task; task is ${record.status}`,
        { from: record.status },
      );
    }
    const target = record.paused_from ?? TaskStatus.CREATE;
    assertTransition(TaskStatus.PAUSE, target);
    this.move(record, target);
    await handler.continue?.(this.snapshot(record));
    record.paused_from = null;
    this.executions.get(record.task_id)?.resume();
  }

  private async rollback(handler: TaskHandler, record: TaskRecord): Promise<void> {
    assertTransition(record.status, TaskStatus.ROLLBACK);
    if (!handler.rollback) {
      throw new ContractException(
        ContractErrorCode.NOT_IMPLEMENTED,
        `task type ${handler.type} does not implement rollback`,
      );
    }
    try {
      await handler.rollback(this.snapshot(record));
    } catch (err) {
      if (err instanceof ContractException) throw err;
      throw new ContractException(
        ContractErrorCode.INTERNAL,
        `rollback failed: ${errorMessage(err)}`,
      );
    }
    this.move(record, TaskStatus.ROLLBACK);
  }

  private async change(
    handler: TaskHandler,
    record: TaskRecord,
    params: Record<string, unknown>,
  ): Promise<void> {
    if (!CHANGEABLE.has(record.status)) {
      throw new ContractException(
        ContractErrorCode.ILLEGAL_TRANSITION,
        `params of a ${record.status} task cannot change`,
        { from: record.status },
      );
    }
    record.params = handler.change ? await handler.change(this.snapshot(record), params) : params;
  }

  private async clean(handler: TaskHandler, record: TaskRecord): Promise<void> {
    assertTransition(record.status, TaskStatus.FINISH);
    await handler.clean?.(this.snapshot(record));
    this.move(record, TaskStatus.FINISH);
  }

  // ---- run ------------------------------------------------------------------------------------

  private async run(
    handler: TaskHandler,
    taskType: string,
    taskId: string,
    fence: number,
  ): Promise<TaskViewDto> {
    const started = await this.mutex.run(taskId, async () => {
      const record = await this.require(taskType, taskId);
      await this.acceptFence(record, fence);
      if (this.executions.has(taskId)) {
        throw new ContractException(
          ContractErrorCode.ILLEGAL_TRANSITION,
          `task ${taskId} is already running`,
          {
            from: record.status,
          },
        );
      }
      assertTransition(record.status, TaskStatus.RUNNING);
      if (!RUNNABLE_FROM.has(record.status)) {
        throw new ContractException(
          ContractErrorCode.ILLEGAL_TRANSITION,
          `run needs a CREATE or PREPARE task; task is ${record.status} (use continue for a paused one)`,
          { from: record.status },
        );
      }
      this.move(record, TaskStatus.RUNNING);
      record.heartbeat_at = record.updated_at;
      record.result = null;
      record.error = null;
      record.progress = { percent: 0, step: null, message: null, updated_at: null };
      await this.store.save(record);
      const execution = new TaskExecution(taskId, record.attempt, fence);
      this.executions.set(taskId, execution);
      execution.done = this.execute(handler, record, execution);
      return { record, execution };
    });
    if (handler.blocking === BlockingKind.SYNC) {
      await started.execution.done;
      const after = await this.store.get(taskId);
      return toTaskView(after ?? started.record);
    }
    return toTaskView(started.record);
  }

  /** Runs the handler and writes its outcome. Never rejects. */
  private async execute(
    handler: TaskHandler,
    record: TaskRecord,
    execution: TaskExecution,
  ): Promise<void> {
    const startedAt = this.clock();
    this.runLog?.runStarted({
      task_id: record.task_id,
      task_type: record.task_type,
      attempt: record.attempt,
      fence: execution.fence,
      lock_keys: record.lock_keys,
      started_at: startedAt,
    });
    let outcome: TaskStatus.SUCCESS | TaskStatus.FAIL = TaskStatus.FAIL;
    let result: Record<string, unknown> | null = null;
    let error: { message: string; code: string | null } | null = null;
    try {
      // Yield once so a sync caller's mutex section finishes before the handler starts.
      await Promise.resolve();
      const out = await handler.run(this.runContext(record, execution));
      outcome = TaskStatus.SUCCESS;
      result = out?.result ?? {};
    } catch (err) {
      error = {
        message: errorMessage(err),
        code: err instanceof TaskCancelledError ? 'cancelled' : null,
      };
    }
    const endedAt = this.clock();
    let written: TaskRecord | undefined;
    try {
      written = await this.mutex.run(record.task_id, async () => {
        const current = await this.store.get(record.task_id);
        if (!current || current.attempt !== execution.attempt) return undefined;
        if (current.status === TaskStatus.PAUSE) {
          // Finished before it reached a checkpoint: record that it was running again.
          this.move(current, TaskStatus.RUNNING);
          current.paused_from = null;
        }
        if (current.status !== TaskStatus.RUNNING) return undefined;
        this.move(current, outcome);
        current.result = result;
        current.error = error;
        if (outcome === TaskStatus.SUCCESS) {
          current.progress = { ...current.progress, percent: 100, updated_at: current.updated_at };
        }
        await this.store.save(current);
        return current;
      });
    } catch (err) {
      this.logger.error(`could not record the outcome of ${record.task_id}: ${errorMessage(err)}`);
    } finally {
      this.executions.delete(record.task_id);
      this.runLog?.runEnded({
        task_id: record.task_id,
        task_type: record.task_type,
        attempt: execution.attempt,
        fence: execution.fence,
        lock_keys: record.lock_keys,
        started_at: startedAt,
        ended_at: endedAt,
        outcome,
      });
    }
    if (written && handler.blocking === BlockingKind.ASYNC && this.callbacks) {
      await execution.settleReports();
      await this.callbacks.completed(written).catch((err: unknown) => {
        // The scheduler's Checker polls status, so a lost callback delays, never loses, the outcome.
        this.logger.warn(`completion callback for ${record.task_id} failed: ${errorMessage(err)}`);
      });
    }
  }

  private runContext(record: TaskRecord, execution: TaskExecution): RunContext {
    const snapshot = this.snapshot(record);
    type Progress = { percent: number; step?: string; message?: string };
    // Reports to the scheduler go out in the background, one at a time, newest first: the
    // handler never waits on the network, and a slow scheduler gets fewer, fresher reports. A
    // progress waiting to go is not replaced by a plain heartbeat (a progress is one too).
    let sending: Promise<void> | undefined;
    let queued: { progress?: Progress } | undefined;
    execution.settleReports = () => {
      queued = undefined;
      return sending ?? Promise.resolve();
    };
    const report = (item: { progress?: Progress }): void => {
      queued = item.progress || !queued ? item : queued;
      if (sending) return;
      sending = (async () => {
        while (queued) {
          const { progress } = queued;
          queued = undefined;
          const call = progress
            ? this.callbacks?.progress(record.task_id, execution.attempt, execution.fence, progress)
            : this.callbacks?.heartbeat(record.task_id, execution.attempt, execution.fence);
          await call?.catch((err: unknown) =>
            this.logger.warn(`callback for ${record.task_id} failed: ${errorMessage(err)}`),
          );
        }
        sending = undefined;
      })();
    };
    const beat = async (progress?: {
      percent: number;
      step?: string;
      message?: string;
    }): Promise<void> => {
      await this.mutex.run(record.task_id, async () => {
        const current = await this.store.get(record.task_id);
        if (!current || current.attempt !== execution.attempt) return;
        current.heartbeat_at = this.isoNow();
        if (progress) {
          current.progress = {
            percent: Math.max(0, Math.min(100, progress.percent)),
            step: progress.step ?? null,
            message: progress.message ?? null,
            updated_at: current.heartbeat_at,
          };
        }
        await this.store.save(current);
      });
      if (this.callbacks) report({ progress });
    };
    return {
      task: snapshot,
      signal: execution.abort.signal,
      progress: (percent, step, message) => beat({ percent, step, message }),
      heartbeat: () => beat(),
      checkpoint: () => execution.checkpoint(),
    };
  }

  /** A valid new attempt arrived while the previous one still runs here: stop it first. */
  private async stopSupersededRun(execution: TaskExecution, attempt: number): Promise<void> {
    execution.cancel(`superseded by attempt ${attempt}`);
    await Promise.race([execution.done, delay(SUPERSEDE_WAIT_MS)]);
  }

  // ---- helpers --------------------------------------------------------------------------------

  private async locked(
    taskType: string,
    taskId: string,
    fence: number,
    change: (record: TaskRecord) => Promise<void>,
  ): Promise<TaskViewDto> {
    return this.mutex.run(taskId, async () => {
      const record = await this.require(taskType, taskId);
      await this.acceptFence(record, fence);
      await change(record);
      await this.save(record);
      return toTaskView(record);
    });
  }

  private handlerFor(taskType: string): TaskHandler {
    const handler = this.handlers.get(taskType);
    if (!handler) {
      throw new ContractException(
        ContractErrorCode.TASK_TYPE_NOT_FOUND,
        `no handler for task type ${taskType}`,
        {
          task_type: taskType,
          known: [...this.handlers.keys()],
        },
      );
    }
    return handler;
  }

  private async find(taskType: string, taskId: string): Promise<TaskRecord | undefined> {
    const record = await this.store.get(taskId);
    return record && record.task_type === taskType ? record : undefined;
  }

  private async require(taskType: string, taskId: string): Promise<TaskRecord> {
    const record = await this.find(taskType, taskId);
    if (!record) {
      throw new ContractException(
        ContractErrorCode.TASK_NOT_FOUND,
        `task ${taskId} of type ${taskType} is unknown`,
        {
          task_id: taskId,
        },
      );
    }
    return record;
  }

  /**
   * Every changing call passes here first, under the task's mutex: a lower fence than already
   * seen is refused (nothing changes), and a higher one is stored at once — even when the call is
   * then refused or answered idempotently — so the holder it replaced is refused from now on.
   */
  private async acceptFence(record: TaskRecord, fence: number): Promise<void> {
    this.checkFence(record, fence);
    if (fence > record.fence) {
      record.fence = fence;
      await this.store.save(record);
    }
  }

  /** A lower fence than already seen means another lock holder has taken over: refuse, change nothing. */
  private checkFence(record: TaskRecord, fence: number): void {
    if (fence < record.fence) {
      throw new ContractException(
        ContractErrorCode.STALE_FENCE,
        `fence ${fence} is lower than ${record.fence} already seen for task ${record.task_id}`,
        { seen: record.fence, given: fence },
      );
    }
  }

  private move(record: TaskRecord, to: TaskStatus): void {
    assertTransition(record.status, to);
    record.status = to;
    record.updated_at = this.isoNow();
  }

  private async save(record: TaskRecord): Promise<void> {
    record.updated_at = this.isoNow();
    await this.store.save(record);
  }

  private snapshot(record: TaskRecord): TaskSnapshot {
    return Object.freeze({
      taskId: record.task_id,
      taskType: record.task_type,
      taskName: record.task_name,
      attempt: record.attempt,
      fence: record.fence,
      status: record.status,
      params: structuredClone(record.params),
      lockKeys: [...record.lock_keys],
      result: record.result && structuredClone(record.result),
    });
  }

  private isoNow(): string {
    return new Date(this.clock()).toISOString();
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function defaultSummary(record: TaskRecord): string {
  if (record.error) return `${record.status}: ${record.error.message}`;
  if (record.result) {
    const keys = Object.keys(record.result);
    return keys.length ? `${record.status}: ${keys.join(', ')}` : record.status;
  }
  return record.status;
}
