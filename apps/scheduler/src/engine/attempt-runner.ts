import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  BlockingKind,
  CallOptions,
  ContractCall,
  IllegalTransitionError,
  TaskStatus,
  TaskViewDto,
  WorkerClient,
  waitUntil,
} from '@baton/task-contract';
import { Clock, crashPoint, TaskLog } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskChange, TaskModel } from '../task-store';
import { TaskTypeModel } from '../task-types';
import { WorkerModel, WorkersService } from '../workers';
import { WORKER_CLIENT } from './engine.tokens';
import { REST, Step, createBody, createsAndRuns, message, syncRunTimeoutMs } from './engine-rules';
import { FailurePolicy } from './failure-policy';
import { TaskSteps } from './task-steps';
import { WorkerStateAdoption } from './worker-state-adoption';

/**
 * An attempt on a worker: the write that opens it, then create, prepare and run (or create_run
 * in one call), each answer taken over as the task's next step.
 */
@Injectable()
export class AttemptRunner {
  private readonly logger = new Logger('TaskEngine');

  constructor(
    @Inject(WORKER_CLIENT) private readonly client: WorkerClient,
    private readonly workers: WorkersService,
    private readonly steps: TaskSteps,
    private readonly policy: FailurePolicy,
    private readonly adoption: WorkerStateAdoption,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  async runAttempt(
    t0: TaskModel,
    type: TaskTypeModel,
    worker: WorkerModel,
    attempt: number,
    /** Called once the attempt is written as bound to its worker (or could not be). */
    bound: () => void = () => undefined,
  ): Promise<Step> {
    const opts = (timeoutMs?: number): CallOptions => ({
      fence: t0.fence,
      requestId: `${t0.taskId}/${attempt}`,
      traceparent: TaskLog.traceparent(t0.taskId, attempt),
      ...(timeoutMs ? { timeoutMs } : {}),
    });
    let t: TaskModel = t0;
    // A new attempt of a sync type with nothing to prepare: one round trip (create_run).
    const redrive = t.status === TaskStatus.CREATE || t.status === TaskStatus.PREPARE;
    if (!redrive && createsAndRuns(type))
      return this.startCreateAndRun(t, type, worker, attempt, bound);
    // The attempt is bound to its worker before the worker hears of it: a crash after the create
    // still knows where the task may be (a re-drive sends the same create to the same worker).
    if (!redrive || t.attempt !== attempt || t.workerId !== worker.workerId) {
      const next = await this.steps.step(
        t,
        this.attemptStart(
          t,
          worker,
          attempt,
          false,
          `attempt ${attempt} to worker ${worker.workerId}: create`,
        ),
      );
      bound();
      if (!next) return REST;
      t = next;
    }
    bound();
    crashPoint('before-create-call');
    if (t.startTime !== null) await waitUntil(t.startTime, this.clock);
    let view: TaskViewDto;
    try {
      view = await this.client.create(worker.url, t.taskType, createBody(t, attempt), opts());
    } catch (err) {
      const known = await this.reconcileRefusedCreate(t, worker, attempt, err);
      if (!known) return this.policy.callFailed(t, type, worker, err, 'create');
      view = known;
    }
    crashPoint('after-create-call');
    const sync = type.blocking === BlockingKind.SYNC;
    const prepares = type.implements.includes(ContractCall.PREPARE);
    // The worker may be ahead of us after a crash between its answer and our write.
    if (view.task_status !== TaskStatus.CREATE && view.task_status !== TaskStatus.PREPARE)
      return this.adoption.adoptWorkerState(t, type, view);

    if (prepares && view.task_status === TaskStatus.CREATE) {
      try {
        view = await this.client.prepare(worker.url, t.taskType, t.taskId, opts());
      } catch (err) {
        return this.policy.callFailed(t, type, worker, err, 'prepare');
      }
      if (view.task_status === TaskStatus.FAIL)
        return this.policy.failed(t, type, view.error?.message ?? 'prepare failed');
      const next = await this.steps.step(t, { to: TaskStatus.PREPARE, reason: 'resources ready' });
      if (!next) return REST;
      t = next;
    }

    if (sync && t.status !== TaskStatus.RUNNING) {
      // Visible as RUNNING while the worker works; the outcome follows in the next write.
      const next = await this.steps.step(t, {
        to: TaskStatus.RUNNING,
        patch: { startedAt: this.clock.now(), heartbeatAt: this.clock.now() },
        reason: 'run',
      });
      if (!next) return REST;
      t = next;
    }
    return this.runOnWorker(t, type, worker);
  }

  /**
   * The worker refused the create for the state it holds the task in (an older attempt still
   * running, or ended in a way that takes no new attempt): ask it. When it holds this attempt (or
   * a newer one) already, that is the answer; otherwise undefined, and the attempt moves on.
   */
  private async reconcileRefusedCreate(
    t: TaskModel,
    worker: WorkerModel,
    attempt: number,
    err: unknown,
  ): Promise<TaskViewDto | undefined> {
    if (!(err instanceof IllegalTransitionError)) return undefined;
    try {
      const [view] = await this.client.query(
        worker.url,
        t.taskType,
        { task_id: t.taskId },
        {
          fence: t.fence,
          requestId: `${t.taskId}/${attempt}/reconcile`,
          traceparent: TaskLog.traceparent(t.taskId, attempt),
        },
      );
      if (!view) return undefined;
      this.logger.warn(
        TaskLog.line(
          t.taskId,
          attempt,
          `task ${t.taskId}: ${worker.workerId} refused attempt ${attempt} (${message(err)}); it holds attempt ${view.attempt} in ${view.task_status}`,
        ),
      );
      return view.attempt >= attempt ? view : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * RUNNING is written first (attempt row, start time), then create and run go in one call. A
   * crash between the two leaves a RUNNING task its worker does not know: the poll sends the
   * same call again (create is idempotent on task and attempt).
   */
  private async startCreateAndRun(
    t: TaskModel,
    type: TaskTypeModel,
    worker: WorkerModel,
    attempt: number,
    bound: () => void,
  ): Promise<Step> {
    const next = await this.steps.step(
      t,
      this.attemptStart(
        t,
        worker,
        attempt,
        true,
        `attempt ${attempt} to worker ${worker.workerId}: create and run`,
      ),
    );
    bound();
    if (!next) return REST;
    // Sent at once, even ahead of a start_time a moment away: create_run begins the run on the
    // start_time itself (CREATE_RUN_START_WAIT_MAX_MS), on the worker's side of the wire.
    return this.sendCreateAndRun(next, type, worker);
  }

  /**
   * The write that opens an attempt on a worker (its row with it): to CREATE, or straight on to
   * RUNNING when the run follows at once. Started now, or at start_time when that is a moment
   * ahead (the run call waits for it).
   */
  private attemptStart(
    t: TaskModel,
    worker: WorkerModel,
    attempt: number,
    running: boolean,
    reason: string,
  ): Omit<TaskChange, 'actor'> {
    const now = Math.max(this.clock.now(), t.startTime ?? 0);
    return {
      via: [TaskStatus.CREATE],
      to: running ? TaskStatus.RUNNING : TaskStatus.CREATE,
      patch: {
        attempt,
        workerId: worker.workerId,
        workerUrl: worker.url,
        error: null,
        result: null,
        // A re-run of a finished task keeps its outcome until here: a new attempt has none yet.
        outcome: null,
        pendingAction: null,
        ...(running ? { startedAt: now, heartbeatAt: now } : {}),
      },
      attemptStart: {
        attempt,
        workerId: worker.workerId,
        workerUrl: worker.url,
        fence: t.fence,
        startedAt: now,
      },
      reason,
    };
  }

  /** The worker answered a run: it counts as healthy again (recorded in the background). */
  private noteWorkerSuccess(worker: WorkerModel): void {
    this.workers
      .reportSuccess(worker.workerId)
      .catch((err: unknown) =>
        this.logger.warn(`recording a success of ${worker.workerId}: ${message(err)}`),
      );
  }

  async sendCreateAndRun(t: TaskModel, type: TaskTypeModel, worker: WorkerModel): Promise<Step> {
    let view: TaskViewDto;
    crashPoint('before-run-call');
    try {
      view = await this.client.createAndRun(worker.url, t.taskType, createBody(t, t.attempt), {
        fence: t.fence,
        requestId: `${t.taskId}/${t.attempt}`,
        traceparent: TaskLog.traceparent(t.taskId, t.attempt),
        // Sent ahead of a start_time, the worker waits for it before the run begins.
        timeoutMs: syncRunTimeoutMs(t, type) + Math.max(0, (t.startTime ?? 0) - this.clock.now()),
      });
    } catch (err) {
      return this.policy.callFailed(t, type, worker, err, 'create and run');
    }
    crashPoint('after-run-call');
    this.noteWorkerSuccess(worker);
    return this.adoption.adoptWorkerState(t, type, view);
  }

  /** The run call of the current attempt, then whatever the worker says it led to. */
  async runOnWorker(t: TaskModel, type: TaskTypeModel, worker: WorkerModel): Promise<Step> {
    const sync = type.blocking === BlockingKind.SYNC;
    let view: TaskViewDto;
    crashPoint('before-run-call');
    try {
      view = await this.client.run(worker.url, t.taskType, t.taskId, {
        fence: t.fence,
        requestId: `${t.taskId}/${t.attempt}`,
        traceparent: TaskLog.traceparent(t.taskId, t.attempt),
        ...(sync ? { timeoutMs: syncRunTimeoutMs(t, type) } : {}),
      });
    } catch (err) {
      return this.policy.callFailed(t, type, worker, err, 'run');
    }
    crashPoint('after-run-call');
    this.noteWorkerSuccess(worker);
    if (!sync && view.task_status === TaskStatus.RUNNING) {
      const now = this.clock.now();
      await this.steps.step(t, {
        to: TaskStatus.RUNNING,
        patch: {
          startedAt: now,
          heartbeatAt: now,
          dueAt: now + this.config.checker.pollIntervalMs,
          owner: null,
          leaseUntil: null,
        },
        reason: 'running; the worker reports back',
      });
      return REST;
    }
    return this.adoption.adoptWorkerState(t, type, view);
  }
}
