import { NotifyEvent } from '../enums/task-kind.enum';
import { TaskStatus } from '../enums/task-status.enum';
import { ContractErrorCode, ContractException } from '../errors/contract.exception';
import { assertTransition, canTransition } from '../state-machine/transition-table';
import { CreateTaskRequestDto, NotifyRequestDto } from '../dto/worker-requests.dto';
import { TaskViewDto } from '../dto/worker-responses.dto';
import { errorMessage } from '../util/error-message';
import { TaskExecution } from './task-execution';
import { TaskHandler } from './task-handler.interface';
import { TaskLedger } from './task-ledger';
import { TaskRecord, toSnapshot, toTaskView } from './task-record';
import { TaskRunner } from './task-runner';

/** Statuses in which params may still change. */
const CHANGEABLE: ReadonlySet<TaskStatus> = new Set([
  TaskStatus.CREATE,
  TaskStatus.PREPARE,
  TaskStatus.POSTPONE,
  TaskStatus.RUNNING,
  TaskStatus.PAUSE,
]);

/** Statuses of an attempt that has not begun its run: a newer attempt may take its place. */
const UNSTARTED: ReadonlySet<TaskStatus> = new Set([TaskStatus.CREATE, TaskStatus.PREPARE]);

/**
 * The lifecycle calls other than the run itself: create, prepare, pause, continue, rollback,
 * change, clean and notify. Each checks the transition table, calls the handler's hook, and
 * moves the record; pause, continue and cancel also signal the run going on, if any.
 *
 * Except create (which takes the lock itself), each is given a record under the task's lock with
 * its fence accepted (`TaskLedger.change`), which stores it afterwards.
 */
export class TaskLifecycle {
  constructor(
    private readonly ledger: TaskLedger,
    private readonly runner: TaskRunner,
  ) {}

  async create(
    handler: TaskHandler,
    fence: number,
    req: CreateTaskRequestDto,
  ): Promise<TaskViewDto> {
    const attempt = req.attempt ?? 1;
    // Every rule is checked before a running attempt is stopped: a refused create (stale fence,
    // other type, forbidden status) must leave the live run alone.
    for (let pass = 1; ; pass++) {
      const outcome = await this.ledger.exclusive(req.task_id, () =>
        this.createLocked(handler, fence, req, attempt, pass),
      );
      if (!(outcome instanceof TaskExecution)) return outcome;
      await this.runner.supersede(outcome, attempt);
    }
  }

  async prepare(handler: TaskHandler, record: TaskRecord): Promise<void> {
    assertTransition(record.status, TaskStatus.PREPARE);
    try {
      await handler.prepare?.(toSnapshot(record));
      this.ledger.move(record, TaskStatus.PREPARE);
    } catch (err) {
      if (err instanceof ContractException) throw err;
      // Preconditions not met is an outcome of the call, not a broken call.
      this.ledger.move(record, TaskStatus.FAIL);
      record.error = { message: `prepare failed: ${errorMessage(err)}`, code: 'prepare' };
    }
  }

  async pause(handler: TaskHandler, record: TaskRecord): Promise<void> {
    assertTransition(record.status, TaskStatus.PAUSE);
    const execution = this.runner.execution(record.task_id);
    if (execution && !handler.pausable) {
      throw new ContractException(
        ContractErrorCode.NOT_IMPLEMENTED,
        `task type ${handler.type} cannot pause a running task`,
      );
    }
    const from = record.status;
    this.ledger.move(record, TaskStatus.PAUSE);
    // The hook may refuse; only once it has agreed does anything outside the record change.
    await handler.pause?.(toSnapshot(record));
    record.paused_from = from;
    execution?.pause();
  }

  async continue(handler: TaskHandler, record: TaskRecord): Promise<void> {
    if (record.status !== TaskStatus.PAUSE) {
      throw new ContractException(
        ContractErrorCode.ILLEGAL_TRANSITION,
        `continue needs a paused task; task is ${record.status}`,
        { from: record.status },
      );
    }
    const target = record.paused_from ?? TaskStatus.CREATE;
    assertTransition(TaskStatus.PAUSE, target);
    this.ledger.move(record, target);
    await handler.continue?.(toSnapshot(record));
    record.paused_from = null;
    const execution = this.runner.execution(record.task_id);
    // A run paused for longer than its heartbeat window beats again from now: until its next
    // beat it would otherwise look stalled to the scheduler's first poll.
    if (execution && target === TaskStatus.RUNNING) record.heartbeat_at = this.ledger.isoNow();
    execution?.resume();
  }

  async rollback(handler: TaskHandler, record: TaskRecord): Promise<void> {
    assertTransition(record.status, TaskStatus.ROLLBACK);
    if (!handler.rollback) {
      throw new ContractException(
        ContractErrorCode.NOT_IMPLEMENTED,
        `task type ${handler.type} does not implement rollback`,
      );
    }
    try {
      await handler.rollback(toSnapshot(record));
    } catch (err) {
      if (err instanceof ContractException) throw err;
      throw new ContractException(
        ContractErrorCode.INTERNAL,
        `rollback failed: ${errorMessage(err)}`,
      );
    }
    this.ledger.move(record, TaskStatus.ROLLBACK);
  }

  async change(
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
    record.params = handler.change ? await handler.change(toSnapshot(record), params) : params;
  }

  /** A clean of a task already cleaned (FINISH) is a repeat: nothing happens, and it answers as done. */
  async clean(handler: TaskHandler, record: TaskRecord): Promise<void> {
    if (record.status === TaskStatus.FINISH) return;
    assertTransition(record.status, TaskStatus.FINISH);
    await handler.clean?.(toSnapshot(record));
    this.ledger.move(record, TaskStatus.FINISH);
  }

  async notify(handler: TaskHandler, record: TaskRecord, req: NotifyRequestDto): Promise<void> {
    if (handler.notify) await handler.notify(toSnapshot(record), req.event, req.data);
    if (req.event === NotifyEvent.CANCEL || req.event === NotifyEvent.DEADLINE) {
      const reason =
        req.event === NotifyEvent.DEADLINE ? 'deadline exceeded' : (req.message ?? 'cancelled');
      const execution = this.runner.execution(record.task_id);
      if (execution) {
        // The outcome (FAIL) is written when the run actually stops, never before: until then
        // it still runs, and a new attempt must not start beside it.
        execution.cancel(reason);
      } else if (canTransition(record.status, TaskStatus.FAIL)) {
        this.ledger.move(record, TaskStatus.FAIL);
        record.error = { message: reason, code: req.event };
      }
    }
  }

  /** One pass of create under the task's lock: a view, or the execution to stop first. */
  private async createLocked(
    handler: TaskHandler,
    fence: number,
    req: CreateTaskRequestDto,
    attempt: number,
    pass: number,
  ): Promise<TaskViewDto | TaskExecution> {
    const taskType = handler.type;
    const existing = await this.ledger.get(req.task_id);
    if (existing && existing.task_type !== taskType) {
      throw new ContractException(
        ContractErrorCode.CREATE_CONFLICT,
        `task ${req.task_id} exists with type ${existing.task_type}`,
      );
    }
    if (existing) await this.ledger.acceptFence(existing, fence);
    // Idempotent: the same (or an older) attempt answers what is there (a newer fence is kept).
    if (existing && attempt <= existing.attempt) return toTaskView(existing);
    if (existing) {
      // A newer attempt replaces one that never ran here (the scheduler moved the task on, or
      // sent a create it could not record): nothing of the old attempt has started.
      if (!UNSTARTED.has(existing.status)) assertTransition(existing.status, TaskStatus.CREATE);
      const running = this.runner.execution(existing.task_id);
      if (running && pass === 1) return running;
      if (running) {
        throw new ContractException(
          ContractErrorCode.ILLEGAL_TRANSITION,
          `attempt ${existing.attempt} of task ${existing.task_id} is still running`,
        );
      }
    }
    const now = this.ledger.isoNow();
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
    await handler.create(toSnapshot(record));
    await this.ledger.write(record);
    return toTaskView(record);
  }
}
