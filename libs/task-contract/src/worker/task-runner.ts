import { Logger } from '@nestjs/common';
import { Clock, systemClock } from '@baton/time';
import { BlockingKind } from '../enums/task-kind.enum';
import { TaskStatus } from '../enums/task-status.enum';
import { ContractErrorCode, ContractException } from '../errors/contract.exception';
import { assertTransition } from '../state-machine/transition-table';
import { TaskViewDto } from '../dto/worker-responses.dto';
import { errorMessage } from '../util/error-message';
import { AttemptLogShipper, RunLog, followOutput } from './attempt-log-shipper';
import { RunReporter } from './run-reporter';
import { TaskExecution } from './task-execution';
import {
  RunContext,
  RunLogListener,
  TaskCancelledError,
  TaskHandler,
} from './task-handler.interface';
import { TaskLedger } from './task-ledger';
import { TaskRecord, toSnapshot, toTaskView } from './task-record';
import { WorkerCallbacks } from './worker-callbacks.interface';

/** How long a new attempt waits for the previous one to stop after aborting it. */
const SUPERSEDE_WAIT_MS = 2_000;
/** How long shutdown waits for runs to stop after cancelling them. */
const SHUTDOWN_WAIT_MS = 5_000;

/** Statuses from which `running` may start an execution. */
const RUNNABLE_FROM: ReadonlySet<TaskStatus> = new Set([TaskStatus.CREATE, TaskStatus.PREPARE]);

/**
 * The runs in this process: starts an attempt's run, hands the handler its run context
 * (heartbeat, progress, checkpoint, abort signal), and writes the outcome when the run settles.
 * A run holds no lock while it works; its outcome is written under the task's lock.
 */
export class TaskRunner {
  private readonly logger = new Logger('TaskWorker');
  private readonly executions = new Map<string, TaskExecution>();
  /** Ships what runs log to the scheduler (none without a scheduler to send to). */
  private readonly shipper: AttemptLogShipper | undefined;

  constructor(
    private readonly ledger: TaskLedger,
    private readonly runLog: RunLogListener | undefined,
    private readonly callbacks: WorkerCallbacks | undefined,
    /** Bounds the waits for runs to stop (a handler may ignore its abort signal). */
    private readonly clock: Clock = systemClock,
  ) {
    const logs = callbacks?.logs?.bind(callbacks);
    const logsMany = callbacks?.logsMany?.bind(callbacks);
    this.shipper = logs && new AttemptLogShipper({ logs, logsMany }, clock, this.logger);
    // The contract: callbacks carry the highest fence accepted for the task, also one accepted
    // while the run goes on (a scheduler that took the task over).
    ledger.onFenceRaised((taskId, fence) => {
      this.executions.get(taskId)?.raiseFence(fence);
      this.shipper?.raiseFence(taskId, fence);
    });
  }

  /** Runs going on in this process, by task type. */
  runningByType(): Map<string, number> {
    const out = new Map<string, number>();
    for (const e of this.executions.values()) out.set(e.taskType, (out.get(e.taskType) ?? 0) + 1);
    return out;
  }

  /** The run of this task going on in this process, if any. */
  execution(taskId: string): TaskExecution | undefined {
    return this.executions.get(taskId);
  }

  /**
   * `running`: a sync type answers the outcome, an async one answers RUNNING at once. A sync
   * outcome whose caller went away before it could be answered (`callerGone`: the scheduler died
   * while it waited) is reported through the completion callback instead, as an async one is:
   * otherwise it would live only in this worker, and be lost with it.
   */
  async run(
    handler: TaskHandler,
    taskType: string,
    taskId: string,
    fence: number,
    callerGone: () => boolean = () => false,
  ): Promise<TaskViewDto> {
    const started = await this.ledger.exclusive(taskId, async () => {
      const record = await this.ledger.require(taskType, taskId);
      await this.ledger.acceptFence(record, fence);
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
      this.ledger.move(record, TaskStatus.RUNNING);
      record.heartbeat_at = record.updated_at;
      record.result = null;
      record.error = null;
      record.progress = { percent: 0, step: null, message: null, updated_at: null };
      await this.ledger.write(record);
      const execution = new TaskExecution(taskId, record.attempt, fence, taskType);
      this.executions.set(taskId, execution);
      execution.done = this.execute(handler, record, execution);
      return { record, execution };
    });
    if (handler.blocking === BlockingKind.SYNC) {
      await started.execution.done;
      const after = await this.ledger.get(taskId);
      if (after && callerGone()) this.reportUnanswered(after, started.execution);
      return toTaskView(after ?? started.record);
    }
    return toTaskView(started.record);
  }

  /** Reports, in the background, the outcome of a sync run whose caller is gone. */
  private reportUnanswered(record: TaskRecord, execution: TaskExecution): void {
    const ended = record.status === TaskStatus.SUCCESS || record.status === TaskStatus.FAIL;
    if (!this.callbacks || !ended || record.attempt !== execution.attempt) return;
    this.logger.warn(
      `the caller of ${record.task_id}'s sync run went away before its ${record.status} could be answered: reporting it`,
    );
    void new RunReporter(this.callbacks, execution, this.logger).completed(record);
  }

  /** A valid new attempt arrived while the previous one still runs here: stop it first. */
  async supersede(execution: TaskExecution, attempt: number): Promise<void> {
    execution.cancel(`superseded by attempt ${attempt}`);
    await Promise.race([
      execution.done,
      this.clock.sleep(SUPERSEDE_WAIT_MS, undefined, { unref: true }),
    ]);
  }

  /** Cancels every run and waits for them to stop, a while at most; then sends what they logged. */
  async stopAll(): Promise<void> {
    for (const execution of this.executions.values()) execution.shutdown('worker shutting down');
    // A handler that ignores its abort signal must not hold the shutdown forever.
    await Promise.race([
      Promise.allSettled([...this.executions.values()].map((e) => e.done)),
      this.clock.sleep(SHUTDOWN_WAIT_MS, undefined, { unref: true }),
    ]);
    if (this.shipper)
      await Promise.race([
        this.shipper.close(),
        this.clock.sleep(SHUTDOWN_WAIT_MS, undefined, { unref: true }),
      ]);
  }

  /** Runs the handler and writes its outcome. Never rejects. */
  private async execute(
    handler: TaskHandler,
    record: TaskRecord,
    execution: TaskExecution,
  ): Promise<void> {
    const startedAt = this.ledger.now();
    this.runLog?.runStarted({
      task_id: record.task_id,
      task_type: record.task_type,
      attempt: record.attempt,
      fence: execution.fence,
      lock_keys: record.lock_keys,
      started_at: startedAt,
    });
    const reporter = this.callbacks && new RunReporter(this.callbacks, execution, this.logger);
    let outcome: TaskStatus.SUCCESS | TaskStatus.FAIL = TaskStatus.FAIL;
    let result: Record<string, unknown> | null = null;
    let error: { message: string; code: string | null } | null = null;
    try {
      // Yield once so a sync caller's mutex section finishes before the handler starts.
      await Promise.resolve();
      const out = await handler.run(this.runContext(record, execution, reporter));
      outcome = TaskStatus.SUCCESS;
      result = out?.result ?? {};
    } catch (err) {
      error = {
        message: errorMessage(err),
        code: err instanceof TaskCancelledError ? 'cancelled' : null,
      };
    }
    const endedAt = this.ledger.now();
    let written: TaskRecord | undefined;
    try {
      written = await this.ledger.exclusive(record.task_id, async () => {
        const current = await this.ledger.get(record.task_id);
        if (!current || current.attempt !== execution.attempt) return undefined;
        // Stopped because this process is going away: no outcome. The attempt stays as it is
        // (RUNNING, or PAUSE), answered `execution_lost` once nothing runs it, and the scheduler
        // recovers it without spending a retry.
        if (execution.leftForRecovery && outcome !== TaskStatus.SUCCESS) return undefined;
        if (current.status === TaskStatus.PAUSE) {
          // Finished before it reached a checkpoint: record that it was running again.
          this.ledger.move(current, TaskStatus.RUNNING);
          current.paused_from = null;
        }
        if (current.status !== TaskStatus.RUNNING) return undefined;
        this.ledger.move(current, outcome);
        current.result = result;
        current.error = error;
        if (outcome === TaskStatus.SUCCESS) {
          current.progress = { ...current.progress, percent: 100, updated_at: current.updated_at };
        }
        await this.ledger.write(current);
        return current;
      });
    } catch (err) {
      this.logger.error(`could not record the outcome of ${record.task_id}: ${errorMessage(err)}`);
    } finally {
      this.executions.delete(record.task_id);
      this.shipper?.ended(record.task_id, execution.attempt);
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
    // A stop the scheduler asked for is not reported: the answer to its call said it already.
    if (
      written &&
      handler.blocking === BlockingKind.ASYNC &&
      reporter &&
      !execution.stoppedByScheduler
    ) {
      await reporter.completed(written);
    }
  }

  private runContext(
    record: TaskRecord,
    execution: TaskExecution,
    reporter: RunReporter | undefined,
  ): RunContext {
    const beat = async (progress?: {
      percent: number;
      step?: string;
      message?: string;
    }): Promise<void> => {
      await this.ledger.exclusive(record.task_id, async () => {
        const current = await this.ledger.get(record.task_id);
        if (!current || current.attempt !== execution.attempt) return;
        current.heartbeat_at = this.ledger.isoNow();
        if (progress) {
          current.progress = {
            percent: Math.max(0, Math.min(100, progress.percent)),
            step: progress.step ?? null,
            message: progress.message ?? null,
            updated_at: current.heartbeat_at,
          };
        }
        await this.ledger.write(current);
      });
      reporter?.report(progress);
    };
    return {
      task: toSnapshot(record),
      log:
        this.shipper?.open(record.task_id, execution.attempt, execution.fence) ??
        localRunLog(this.logger, record.task_id, execution.attempt),
      signal: execution.abort.signal,
      progress: (percent, step, message) => beat({ percent, step, message }),
      heartbeat: () => beat(),
      checkpoint: () => execution.checkpoint(),
    };
  }
}

/** A run's log when there is no scheduler to send it to: this process's own log. */
function localRunLog(logger: Logger, taskId: string, attempt: number): RunLog {
  const line =
    (level: 'debug' | 'log' | 'warn' | 'error') =>
    (message: string, fields?: Record<string, unknown>): void =>
      logger[level](
        `${taskId}/${attempt}: ${message}${fields ? ` ${JSON.stringify(fields)}` : ''}`,
      );
  return {
    debug: line('debug'),
    info: line('log'),
    warn: line('warn'),
    error: line('error'),
    pipe: (child) =>
      followOutput(child, (level, l) => (level === 'warn' ? line('warn')(l) : line('log')(l))),
  };
}
