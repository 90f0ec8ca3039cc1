import { tracing } from '../util/tracing';
import { OnModuleDestroy } from '@nestjs/common';
import { Clock, systemClock } from '@baton/time';
import { BlockingKind } from '../enums/task-kind.enum';
import { TaskStatus } from '../enums/task-status.enum';
import { ContractErrorCode, ContractException } from '../errors/contract.exception';
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
import { validateDto } from '../util/validate';
import { waitUntil } from '../util/wait-until';
import { TaskHandlerRegistry, TaskTypeDeclaration } from './task-handler-registry';
import { RunLogListener, TaskHandler } from './task-handler.interface';
import { TaskLedger } from './task-ledger';
import { TaskLifecycle } from './task-lifecycle';
import { TaskReads } from './task-reads';
import { TaskRecord, toTaskView } from './task-record';
import { WorkerMetrics } from './worker-metrics';
import { TaskRunner } from './task-runner';
import { TaskStore } from './stores/task-store.interface';
import { WorkerCallbacks } from './worker-callbacks.interface';

/**
 * create_run waits for a process_arg.start_time at most this far ahead (by this host's clock);
 * one further ahead is taken as clock skew, and the run begins at once.
 */
export const CREATE_RUN_START_WAIT_MAX_MS = 1000;

/** Waits for `at` when that is ahead by at most the maximum; true when it waited. */
async function untilStart(at: number, clock: Clock): Promise<boolean> {
  const left = at - clock.now();
  if (!(left > 0) || left > CREATE_RUN_START_WAIT_MAX_MS) return false;
  await waitUntil(at, clock);
  return true;
}

/** The PUT actions that change status, as the service names them. */
export type StateAction =
  'running' | 'pause' | 'continue' | 'prepare' | 'rollback' | 'change' | 'clean';

/**
 * The worker side of the contract: every rule of docs/architecture.md that does not depend on the
 * task type. Handlers only do the work. This class is the contract's entry point: it finds the
 * handler, validates the body, and hands the call to the part that keeps that rule — the ledger
 * (records, fences, transitions), the lifecycle calls, the runner, the reads.
 *
 * Concurrency: changing calls for one task run one at a time. A run holds no lock while it works;
 * its outcome is written under the lock when it settles. Reads take no lock.
 */
export class TaskWorkerService implements OnModuleDestroy {
  private readonly handlers: TaskHandlerRegistry;
  private readonly ledger: TaskLedger;
  private readonly runner: TaskRunner;
  private readonly lifecycle: TaskLifecycle;
  private readonly reads: TaskReads;
  /** This worker's metrics (`GET /metrics`): runs going on, capacity, every call timed. */
  readonly metrics: WorkerMetrics;

  constructor(
    handlers: readonly TaskHandler[],
    store: TaskStore,
    runLog: RunLogListener | undefined,
    callbacks: WorkerCallbacks | undefined,
    /** The worker's time source: timestamps, timed starts, waits, latencies. */
    private readonly clock: Clock = systemClock,
    /** The capacity the worker declares, shown as `baton_worker_capacity`. */
    capacity?: number,
  ) {
    this.handlers = new TaskHandlerRegistry(handlers);
    this.ledger = new TaskLedger(store, clock);
    this.runner = new TaskRunner(this.ledger, runLog, callbacks, clock);
    this.lifecycle = new TaskLifecycle(this.ledger, this.runner);
    this.reads = new TaskReads(this.ledger, this.runner);
    const types = this.handlers.describe().map((d) => d.task_type);
    this.metrics = new WorkerMetrics(
      () => {
        const running = new Map(types.map((t) => [t, 0]));
        for (const [t, n] of this.runner.runningByType()) running.set(t, n);
        return running;
      },
      capacity,
      clock,
    );
  }

  /** Task types this worker serves, as it declares them to the scheduler. */
  describe(): TaskTypeDeclaration[] {
    return this.handlers.describe();
  }

  async onModuleDestroy(): Promise<void> {
    await this.runner.stopAll();
    await this.ledger.close();
    this.metrics.registry.clear();
    // The spans of the last calls, when the app traces (startTracing): sent before it exits.
    await tracing()
      .flush()
      .catch(() => undefined);
  }

  // ---- create ---------------------------------------------------------------------------------

  /**
   * create, then run the attempt it created, in one request (a sync type with nothing to
   * prepare). A repeat of an attempt that is already past CREATE answers what is there.
   * `callerGone` tells whether the caller went away meanwhile (TaskRunner.run).
   */
  createAndRun(
    taskType: string,
    fence: number,
    body: unknown,
    callerGone?: () => boolean,
  ): Promise<TaskViewDto> {
    return this.metrics.time('create_run', () =>
      this.createThenRun(taskType, fence, body, callerGone),
    );
  }

  private async createThenRun(
    taskType: string,
    fence: number,
    body: unknown,
    callerGone?: () => boolean,
  ): Promise<TaskViewDto> {
    const handler = this.handlers.get(taskType);
    if (handler.blocking !== BlockingKind.SYNC || handler.prepare) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `${taskType} cannot be created and run in one call: it is async or has a prepare step`,
      );
    }
    const created = await this.createOnly(taskType, fence, body);
    if (created.task_status !== TaskStatus.CREATE) return created;
    // A timed start may be sent a moment early: the run begins on start_time itself.
    const startTime = (body as CreateTaskRequestDto).process_arg?.start_time;
    if (startTime !== undefined && (await untilStart(Date.parse(startTime), this.clock))) {
      // Cancelled (or changed) while it waited: answer what is there, as a repeat would.
      const now = await this.ledger.find(taskType, created.task_id);
      if (now && now.status !== TaskStatus.CREATE) return toTaskView(now);
    }
    return this.runner.run(handler, taskType, created.task_id, fence, callerGone);
  }

  create(taskType: string, fence: number, body: unknown): Promise<TaskViewDto> {
    return this.metrics.time('create', () => this.createOnly(taskType, fence, body));
  }

  private async createOnly(taskType: string, fence: number, body: unknown): Promise<TaskViewDto> {
    const handler = this.handlers.get(taskType);
    const req = validateDto(CreateTaskRequestDto, body);
    if (req.create_info.task_type !== taskType) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `create_info.task_type ${req.create_info.task_type} does not match the path's ${taskType}`,
      );
    }
    return this.lifecycle.create(handler, fence, req);
  }

  // ---- reads ----------------------------------------------------------------------------------

  query(
    taskType: string,
    taskId: string | undefined,
    taskName: string | undefined,
  ): Promise<QueryResultDto> {
    return this.metrics.time('query', async () => {
      this.handlers.get(taskType);
      return this.reads.query(taskType, taskId, taskName);
    });
  }

  status(taskType: string, taskId: string): Promise<StatusDto> {
    return this.metrics.time('status', async () => {
      this.handlers.get(taskType);
      return this.reads.status(taskType, taskId);
    });
  }

  heartbeat(taskType: string, taskId: string): Promise<HeartbeatDto> {
    return this.metrics.time('heartbeat', async () =>
      this.reads.heartbeat(this.handlers.get(taskType), taskId),
    );
  }

  progress(taskType: string, taskId: string): Promise<ProgressViewDto> {
    return this.metrics.time('progress', async () =>
      this.reads.progress(this.handlers.get(taskType), taskId),
    );
  }

  summary(taskType: string, taskId: string): Promise<SummaryDto> {
    return this.metrics.time('summary', async () =>
      this.reads.summary(this.handlers.get(taskType), taskId),
    );
  }

  // ---- changing calls -------------------------------------------------------------------------

  notify(taskType: string, taskId: string, fence: number, body: unknown): Promise<TaskViewDto> {
    return this.metrics.time('notify', async () => {
      const handler = this.handlers.get(taskType);
      const req = validateDto(NotifyRequestDto, body);
      return this.ledger.change(taskType, taskId, fence, (r) =>
        this.lifecycle.notify(handler, r, req),
      );
    });
  }

  act(
    taskType: string,
    action: StateAction,
    taskId: string,
    fence: number,
    body: unknown,
    callerGone?: () => boolean,
  ): Promise<TaskViewDto> {
    return this.metrics.time(action, () =>
      this.actOnce(taskType, action, taskId, fence, body, callerGone),
    );
  }

  private async actOnce(
    taskType: string,
    action: StateAction,
    taskId: string,
    fence: number,
    body: unknown,
    callerGone?: () => boolean,
  ): Promise<TaskViewDto> {
    const handler = this.handlers.get(taskType);
    const change = (step: (record: TaskRecord) => Promise<void>): Promise<TaskViewDto> =>
      this.ledger.change(taskType, taskId, fence, step);
    if (action === 'change') {
      const req = validateDto(ChangeRequestDto, body);
      return change((r) => this.lifecycle.change(handler, r, req.params));
    }
    validateDto(ActionRequestDto, body);
    switch (action) {
      case 'running':
        return this.runner.run(handler, taskType, taskId, fence, callerGone);
      case 'prepare':
        return change((r) => this.lifecycle.prepare(handler, r));
      case 'pause':
        return change((r) => this.lifecycle.pause(handler, r));
      case 'continue':
        return change((r) => this.lifecycle.continue(handler, r));
      case 'rollback':
        return change((r) => this.lifecycle.rollback(handler, r));
      case 'clean':
        return change((r) => this.lifecycle.clean(handler, r));
    }
  }
}
