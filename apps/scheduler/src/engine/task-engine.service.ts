import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  KeyedMutex,
  BlockingKind,
  CallOptions,
  ContractCall,
  CreateTaskRequestDto,
  NotImplementedError,
  NotifyEvent,
  RepetitionKind,
  StaleFenceError,
  TaskNotFoundError,
  canTransition,
  TaskStatus,
  TaskViewDto,
  WorkerCallError,
  WorkerClient,
  WorkerTimeoutError,
  WorkerUnavailableError,
  waitUntil,
} from '@baton/task-contract';
import { Clock, crashPoint } from '../common';
import { Metrics } from '../metrics';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TimeoutPolicy, TaskTypeModel, TaskTypesService } from '../task-types';
import { TaskModel, TaskPatch, TaskChange, TasksRepository } from '../task-store';
import { WorkerModel, WorkersService } from '../workers';
import { RateLimit, RateLimiter } from './rate-limiter';
import { ResourceLeases } from './resource-leases';
import { QueueLanes } from '../queue';
import { WORKER_CLIENT } from './engine.tokens';

/** Statuses the engine drives when they are due; the rest wait for a person or a worker. */
export const DRIVABLE: readonly TaskStatus[] = [
  TaskStatus.INIT,
  TaskStatus.POSTPONE,
  TaskStatus.CREATE,
  TaskStatus.PREPARE,
  TaskStatus.RUNNING,
  TaskStatus.SUCCESS,
  TaskStatus.FAIL,
  TaskStatus.ROLLBACK,
  TaskStatus.NONE,
];

/** Why the engine stopped driving a task for now. */
type Rest = { rest: true };
const REST: Rest = { rest: true };
type Step = TaskModel | Rest;

const DEFAULT_SYNC_RUN_SECONDS = 300;
/**
 * Tasks are taken (queue and claim) up to this long before they fall due, so the claim is made
 * before the instant. With a start_time that close, the checks and the write that opens the
 * attempt are done ahead too (RUNNING with started_at = start_time for a create_run, which is
 * sent at once: the worker begins the run on start_time); a create call waits in memory for the
 * instant.
 */
export const EARLY_CLAIM_MS = 5;
/** Most tasks claimed in one statement, and claim statements in flight at once. */
const CLAIM_BATCH = 256;
const CLAIM_WRITERS = 2;
const LOST_RACE = 'lost the race for the task';

function isRest(s: Step): s is Rest {
  return 'rest' in s;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Drives tasks through ARCHITECTURE.md §5. Every step is a compare-and-set on the task row; the
 * engine first takes the task's claim (owner + lease + a new fence) and hands that fence to the
 * worker on every call, so a scheduler that lost its claim is refused by the worker (409) and by
 * the database (version) alike. A task rests when it waits (POSTPONE, RUNNING async, retry
 * backoff, PAUSE) or is done (FINISH); the Dispatcher and Checker bring it back when due.
 */
@Injectable()
export class TaskEngine {
  private readonly logger = new Logger('TaskEngine');
  private readonly actor: string;
  /** The newest row this process wrote per task it drives (lease renewals move the version). */
  private readonly latest = new Map<string, TaskModel>();
  private readonly stepLock = new KeyedMutex();
  private readonly driving = new Set<string>();
  /** Claims asked for and not yet sent: the ones asked for together go in one statement. */
  private claimQueue: {
    taskId: string;
    resolve(t: TaskModel | undefined): void;
    reject(err: unknown): void;
  }[] = [];
  private claimsInFlight = 0;
  private claimPumpScheduled = false;

  constructor(
    private readonly tasks: TasksRepository,
    private readonly types: TaskTypesService,
    private readonly workers: WorkersService,
    private readonly leases: ResourceLeases,
    private readonly clock: Clock,
    @Inject(WORKER_CLIENT) private readonly client: WorkerClient,
    private readonly lanes: QueueLanes,
    private readonly limiter: RateLimiter,
    private readonly metrics: Metrics,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {
    this.actor = `scheduler:${config.instanceId}`;
  }

  /** Claims the task if it is due and free, and drives it until it rests. */
  async drive(taskId: string): Promise<void> {
    // One drive per task at a time in this process (a task may sit in the queue twice).
    if (this.driving.has(taskId)) return;
    this.driving.add(taskId);
    try {
      await this.driveOnce(taskId);
    } finally {
      this.driving.delete(taskId);
    }
  }

  private async driveOnce(taskId: string): Promise<void> {
    let step: Step | undefined = await this.claim(taskId);
    if (!step) return;
    // The claim is renewed for as long as this drive goes on: a long run, but also a chain of
    // calls to a slow worker (notify, rollback, clean) that together outlast one lease.
    const type = await this.types.find(step.taskType).catch(() => undefined);
    const renewer = this.renewWhileDriving(step, type);
    try {
      while (!isRest(step)) step = await this.advance(step);
    } catch (err) {
      // A bug or the database failing: the claim lapses and the Checker brings the task back.
      this.logger.error(
        `driving ${taskId} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
      );
    } finally {
      await renewer.stop();
      this.latest.delete(taskId);
    }
  }

  /**
   * An async worker reported the outcome (the scheduler's notify endpoint). Refused with a
   * StaleFence-style false when the fence or attempt is not the current one.
   */
  async completeFromWorker(
    taskId: string,
    fence: number,
    attempt: number,
    outcome: TaskStatus.SUCCESS | TaskStatus.FAIL,
    result: Record<string, unknown> | null,
    error: { message: string; code?: string | null } | null,
  ): Promise<{ verdict: 'accepted' | 'stale' | 'unknown' | 'already'; task?: TaskModel }> {
    for (let tries = 0; tries < 5; tries++) {
      const t = await this.tasks.findById(taskId);
      if (!t) return { verdict: 'unknown' };
      if (!(await this.isCurrent(t, fence, attempt))) return { verdict: 'stale' };
      if (t.status !== TaskStatus.RUNNING && t.status !== TaskStatus.PAUSE)
        return { verdict: 'already' };
      const next = await this.tasks.apply(
        t,
        {
          ...this.outcomeChange(t, outcome, result, error, 'worker reported'),
          actor: `worker:${t.workerId ?? 'unknown'}`,
        },
        this.clock.now(),
      );
      if (next) return { verdict: 'accepted', task: next };
    }
    return { verdict: 'stale' };
  }

  /**
   * The write of a run's outcome, reported by the worker (callback) or seen by a poll. A failure
   * is not final yet: the engine decides between retry and giving up ('decide').
   */
  private outcomeChange(
    t: TaskModel,
    outcome: TaskStatus.SUCCESS | TaskStatus.FAIL,
    result: Record<string, unknown> | null,
    error: { message: string; code?: string | null } | null,
    how: string,
  ): Omit<TaskChange, 'actor'> {
    const now = this.clock.now();
    return {
      via: t.status === TaskStatus.PAUSE ? [TaskStatus.RUNNING] : [],
      to: outcome,
      patch: {
        result,
        error,
        dueAt: now,
        heartbeatAt: now,
        pendingAction: outcome === TaskStatus.FAIL ? 'decide' : t.pendingAction,
        ...(outcome === TaskStatus.SUCCESS
          ? {
              progress: {
                percent: 100,
                step: t.progress?.step ?? null,
                message: t.progress?.message ?? null,
              },
            }
          : {}),
      },
      reason:
        outcome === TaskStatus.SUCCESS
          ? `${how} success`
          : `${how} failure: ${error?.message ?? 'no reason'}`,
      attemptEnd: { outcome, error: error?.message ?? null },
    };
  }

  /** Puts the task in the queue now (after a worker's report), instead of at the next dispatch. */
  async kick(t: TaskModel): Promise<void> {
    await this.lanes.enqueue([t]).catch(() => undefined);
  }

  /** Heartbeat or progress from a worker; false when the fence/attempt is stale. */
  async beatFromWorker(
    taskId: string,
    fence: number,
    attempt: number,
    progress?: TaskModel['progress'],
  ): Promise<'accepted' | 'stale' | 'unknown'> {
    const t = await this.tasks.findById(taskId);
    if (!t) return 'unknown';
    if (!(await this.isCurrent(t, fence, attempt))) return 'stale';
    // Not a transition: no version bump, so a beat never knocks the engine's own step off. The
    // row must still be at this attempt and running (else the attempt ended meanwhile: stale).
    const recorded = await this.tasks.recordBeat(taskId, attempt, this.clock.now(), progress);
    return recorded ? 'accepted' : 'stale';
  }

  /**
   * A worker's report is current when it is about the task's current attempt and carries a fence
   * that attempt was driven with: not older than the attempt's creation, not newer than the task's.
   * (Every claim takes a new fence, so the worker's own may trail the task's by a few polls.)
   */
  private async isCurrent(t: TaskModel, fence: number, attempt: number): Promise<boolean> {
    if (attempt !== t.attempt || fence > t.fence) return false;
    const since = await this.tasks.attemptFence(t.taskId, attempt);
    return since !== undefined && fence >= since;
  }

  // ---- claim --------------------------------------------------------------------------------

  /**
   * Takes the task's claim if it is drivable, due and free (owner, lease, a new fence); undefined
   * when it is not. The claims the runner asks for together (a queue batch) are one statement.
   */
  private claim(taskId: string): Promise<TaskModel | undefined> {
    return new Promise((resolve, reject) => {
      this.claimQueue.push({ taskId, resolve, reject });
      if (this.claimPumpScheduled) return;
      this.claimPumpScheduled = true;
      // After the current turn: every drive the runner starts in one loop joins the same claim.
      queueMicrotask(() => {
        this.claimPumpScheduled = false;
        this.pumpClaims();
      });
    });
  }

  private pumpClaims(): void {
    while (this.claimsInFlight < CLAIM_WRITERS && this.claimQueue.length > 0) {
      const batch = this.claimQueue.splice(0, CLAIM_BATCH);
      this.claimsInFlight++;
      void this.claimBatch(batch).finally(() => {
        this.claimsInFlight--;
        this.pumpClaims();
      });
    }
  }

  private async claimBatch(batch: typeof this.claimQueue): Promise<void> {
    try {
      const now = this.clock.now();
      const rows = await this.tasks.claimMany(
        batch.map((b) => b.taskId),
        this.config.instanceId,
        now,
        now + this.config.runner.claimLeaseMs,
        DRIVABLE,
        now + EARLY_CLAIM_MS,
      );
      const byId = new Map(rows.map((r) => [r.taskId, r]));
      for (const b of batch) {
        const claimed = byId.get(b.taskId);
        if (claimed) this.latest.set(b.taskId, claimed);
        b.resolve(claimed);
      }
    } catch (err) {
      for (const b of batch) b.reject(err);
    }
  }

  private syncRunTimeoutMs(t: TaskModel, type: TaskTypeModel | undefined): number {
    return (t.deadlineSecond ?? type?.deadlineSecond ?? DEFAULT_SYNC_RUN_SECONDS) * 1000;
  }

  // ---- the state machine ----------------------------------------------------------------------

  private async advance(t: TaskModel): Promise<Step> {
    switch (t.status) {
      case TaskStatus.INIT:
      case TaskStatus.POSTPONE:
      case TaskStatus.NONE:
      case TaskStatus.CREATE:
      case TaskStatus.PREPARE:
        return this.startAttempt(t);
      case TaskStatus.RUNNING:
        return this.poll(t);
      case TaskStatus.SUCCESS:
        // A permanent task's next life, once its backoff is over.
        if (t.pendingAction === 'restart' && !t.cancelRequested) return this.startAttempt(t);
        return this.clean(t, TaskStatus.SUCCESS);
      case TaskStatus.ROLLBACK:
        return this.clean(t, TaskStatus.ROLLBACK);
      case TaskStatus.FAIL:
        return this.afterFailure(t);
      case TaskStatus.PAUSE:
      case TaskStatus.FINISH:
        return this.release(t, 'nothing to do');
    }
  }

  /** INIT, POSTPONE, NONE, or a re-drive of CREATE/PREPARE after a crash: (re)create on a worker and run. */
  private async startAttempt(t: TaskModel): Promise<Step> {
    const type = await this.types.find(t.taskType);
    if (!type) return this.fail(t, `task type ${t.taskType} is not registered`, 'no_type');
    const now = this.clock.now();
    // Claimed a moment early (EARLY_CLAIM_MS) goes on: the worker is called on the instant itself
    // (runAttempt), with the checks and the opening write done before it.
    if (t.startTime !== null && t.startTime - now > EARLY_CLAIM_MS) {
      return this.postpone(
        t,
        t.startTime,
        `waiting for start_time ${new Date(t.startTime).toISOString()}`,
      );
    }
    // Rate limits (per task type, per tenant): a start over the limit waits in POSTPONE.
    const limits = this.rateLimits(t, type);
    if (limits.length > 0) {
      const wait = this.limiter.take(limits);
      if (wait > 0)
        return this.postpone(
          t,
          now + wait,
          `rate limit: ${limits.map((l) => `${l.key} at ${l.perSecond}/s`).join(', ')}`,
        );
    }
    // The first of the three timeouts: waiting too long to start at all.
    if (type.queueTimeoutMs !== null && t.attempt === 0) {
      const waited = now - (t.startTime ?? t.createdAt);
      if (waited > type.queueTimeoutMs) {
        const why = `waited ${waited} ms to start (queue timeout ${type.queueTimeoutMs} ms)`;
        if (type.timeoutPolicy.queue === 'fail') return this.fail(t, why, 'queue_timeout');
        // 'alert' (and 'retry', which for a task that never started means: keep waiting).
        this.logger.warn(`task ${t.taskId}: ${why}`);
      }
    }
    if (
      type.concurrencyLimit !== null &&
      (await this.tasks.countByStatus(t.taskType, [TaskStatus.RUNNING])) >= type.concurrencyLimit
    ) {
      return this.postpone(
        t,
        now + this.backoff(type, 1),
        `${t.taskType} is at its concurrency limit of ${type.concurrencyLimit}`,
      );
    }
    if (t.lockKeys.length > 0) {
      const held = await this.leases.acquire(t.taskId, t.lockKeys, (t.lockTimeout ?? 60) * 1000);
      if (!held)
        return this.postpone(
          t,
          now + this.backoff(type, 1),
          `lock key held: ${t.lockKeys.join(', ')}`,
        );
      // The lease says no other starter is here now; the rows say whether a task that started
      // before still holds a key (its scheduler died and the lease ran out while it runs on).
      const holder = await this.tasks.lockKeyHolder(t.lockKeys, t.taskId);
      if (holder !== undefined) {
        await this.leases.release(t.taskId);
        return this.postpone(
          t,
          now + this.backoff(type, 1),
          `lock key held by task ${holder}: ${t.lockKeys.join(', ')}`,
        );
      }
    }
    // A re-drive goes back to the worker that already has the attempt; a new attempt may go anywhere.
    const sameAttempt = t.status === TaskStatus.CREATE || t.status === TaskStatus.PREPARE;
    const worker = await this.workers.pick(t.taskType, {
      url: sameAttempt ? t.workerUrl : t.requestedUrl,
    });
    if (!worker) {
      await this.leases.release(t.taskId);
      return this.postpone(
        t,
        now + this.backoff(type, 1),
        `no healthy ${t.taskType} worker with free capacity`,
      );
    }
    const attempt = sameAttempt ? t.attempt : t.attempt + 1;
    this.workers.acquireSlot(worker.workerId);
    try {
      return await this.runAttempt(t, type, worker, attempt);
    } finally {
      this.workers.releaseSlot(worker.workerId);
    }
  }

  private async runAttempt(
    t0: TaskModel,
    type: TaskTypeModel,
    worker: WorkerModel,
    attempt: number,
  ): Promise<Step> {
    const opts = (timeoutMs?: number): CallOptions => ({
      fence: t0.fence,
      requestId: `${t0.taskId}/${attempt}`,
      ...(timeoutMs ? { timeoutMs } : {}),
    });
    let t: TaskModel = t0;
    // A new attempt of a sync type with nothing to prepare: one round trip (create_run).
    const redrive = t.status === TaskStatus.CREATE || t.status === TaskStatus.PREPARE;
    if (!redrive && this.createsAndRuns(type))
      return this.startCreateAndRun(t, type, worker, attempt);
    let view: TaskViewDto;
    if (t.startTime !== null) await waitUntil(t.startTime, () => this.clock.now());
    try {
      view = await this.client.create(worker.url, t.taskType, this.createBody(t, attempt), opts());
    } catch (err) {
      return this.callFailed(t, type, worker, err, 'create', false);
    }
    const sync = type.blocking === BlockingKind.SYNC;
    const prepares = type.implements.includes(ContractCall.PREPARE);
    const fresh = view.task_status === TaskStatus.CREATE;
    // A sync type with nothing to prepare goes CREATE -> RUNNING in one write, the attempt's row
    // with it: visible as RUNNING while the worker works.
    const straightToRun = sync && !prepares && fresh;
    if (
      t.status !== TaskStatus.CREATE ||
      t.attempt !== attempt ||
      t.workerId !== worker.workerId ||
      straightToRun
    ) {
      const next = await this.step(
        t,
        this.attemptStart(
          t,
          worker,
          attempt,
          straightToRun,
          straightToRun
            ? `worker ${worker.workerId} accepted attempt ${attempt}; run`
            : `worker ${worker.workerId} accepted attempt ${attempt}`,
        ),
      );
      if (!next) return REST;
      t = next;
    }
    // The worker may be ahead of us after a crash between its answer and our write.
    if (view.task_status !== TaskStatus.CREATE && view.task_status !== TaskStatus.PREPARE)
      return this.adoptWorkerState(t, type, view);

    if (prepares && view.task_status === TaskStatus.CREATE) {
      try {
        view = await this.client.prepare(worker.url, t.taskType, t.taskId, opts());
      } catch (err) {
        return this.callFailed(t, type, worker, err, 'prepare', true);
      }
      if (view.task_status === TaskStatus.FAIL)
        return this.failed(t, type, view.error?.message ?? 'prepare failed');
      const next = await this.step(t, { to: TaskStatus.PREPARE, reason: 'resources ready' });
      if (!next) return REST;
      t = next;
    }

    if (sync && t.status !== TaskStatus.RUNNING) {
      // Visible as RUNNING while the worker works; the outcome follows in the next write.
      const next = await this.step(t, {
        to: TaskStatus.RUNNING,
        patch: { startedAt: this.clock.now(), heartbeatAt: this.clock.now() },
        reason: 'run',
      });
      if (!next) return REST;
      t = next;
    }
    return this.runOnWorker(t, type, worker);
  }

  /** The worker takes create and run in one call for this type (sync, nothing to prepare). */
  private createsAndRuns(type: TaskTypeModel): boolean {
    return (
      type.blocking === BlockingKind.SYNC &&
      !type.implements.includes(ContractCall.PREPARE) &&
      type.implements.includes(ContractCall.CREATE_RUN)
    );
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
  ): Promise<Step> {
    const next = await this.step(
      t,
      this.attemptStart(
        t,
        worker,
        attempt,
        true,
        `attempt ${attempt} to worker ${worker.workerId}: create and run`,
      ),
    );
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

  private async sendCreateAndRun(
    t: TaskModel,
    type: TaskTypeModel,
    worker: WorkerModel,
  ): Promise<Step> {
    let view: TaskViewDto;
    crashPoint('before-run-call');
    try {
      view = await this.client.createAndRun(worker.url, t.taskType, this.createBody(t, t.attempt), {
        fence: t.fence,
        requestId: `${t.taskId}/${t.attempt}`,
        // Sent ahead of a start_time, the worker waits for it before the run begins.
        timeoutMs:
          this.syncRunTimeoutMs(t, type) + Math.max(0, (t.startTime ?? 0) - this.clock.now()),
      });
    } catch (err) {
      return this.callFailed(t, type, worker, err, 'create and run', true);
    }
    crashPoint('after-run-call');
    this.noteWorkerSuccess(worker);
    return this.adoptWorkerState(t, type, view);
  }

  /** The run call of the current attempt, then whatever the worker says it led to. */
  private async runOnWorker(t: TaskModel, type: TaskTypeModel, worker: WorkerModel): Promise<Step> {
    const sync = type.blocking === BlockingKind.SYNC;
    let view: TaskViewDto;
    crashPoint('before-run-call');
    try {
      view = await this.client.run(worker.url, t.taskType, t.taskId, {
        fence: t.fence,
        requestId: `${t.taskId}/${t.attempt}`,
        ...(sync ? { timeoutMs: this.syncRunTimeoutMs(t, type) } : {}),
      });
    } catch (err) {
      return this.callFailed(t, type, worker, err, 'run', true);
    }
    crashPoint('after-run-call');
    this.noteWorkerSuccess(worker);
    if (!sync && view.task_status === TaskStatus.RUNNING) {
      const now = this.clock.now();
      await this.step(t, {
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
    return this.adoptWorkerState(t, type, view);
  }

  /** Continues from what the worker says the task is. */
  private async adoptWorkerState(
    t0: TaskModel,
    type: TaskTypeModel,
    view: TaskViewDto,
  ): Promise<Step> {
    let t = t0;
    switch (view.task_status) {
      case TaskStatus.SUCCESS:
      case TaskStatus.ROLLBACK:
      case TaskStatus.FINISH: {
        // A permanent task lives on unless a cancel was recorded beside this drive meanwhile.
        if (this.keptAlive(t)) t = await this.withCancelFlag(t);
        // Nothing to clean on the worker and no rollback asked: SUCCESS and FINISH in one write.
        // A permanent task lives on instead (its restart is decided under SUCCESS, in clean).
        const done =
          !type.implements.includes(ContractCall.CLEAN) &&
          t.pendingAction === null &&
          !this.keptAlive(t);
        if (done) await this.leases.release(t.taskId);
        const now = this.clock.now();
        const next = await this.step(t, {
          via: [TaskStatus.RUNNING, TaskStatus.SUCCESS],
          to: done ? TaskStatus.FINISH : TaskStatus.SUCCESS,
          patch: {
            result: view.result,
            error: null,
            progress: view.progress
              ? {
                  percent: view.progress.percent,
                  step: view.progress.step,
                  message: view.progress.message,
                }
              : null,
            ...(done
              ? {
                  outcome: TaskStatus.SUCCESS,
                  finishedAt: now,
                  dueAt: null,
                  owner: null,
                  leaseUntil: null,
                }
              : {}),
          },
          attemptEnd: { outcome: TaskStatus.SUCCESS, error: null },
          reason: done ? 'run succeeded; nothing to clean' : 'run succeeded',
        });
        return next && !done ? next : REST;
      }
      case TaskStatus.FAIL:
        return this.failed(t, type, view.error?.message ?? 'run failed');
      case TaskStatus.RUNNING:
      case TaskStatus.PAUSE: {
        const now = this.clock.now();
        await this.step(t, {
          to: TaskStatus.RUNNING,
          patch: {
            dueAt: now + this.config.checker.pollIntervalMs,
            owner: null,
            leaseUntil: null,
            heartbeatAt: now,
          },
          reason: 'running on the worker',
        });
        return REST;
      }
      default:
        return this.failed(
          t,
          type,
          `worker answered ${view.task_status} where an outcome was expected`,
        );
    }
  }

  /** A RUNNING async task is due: ask the worker how it is. */
  private async poll(t: TaskModel): Promise<Step> {
    const type = await this.types.find(t.taskType);
    if (!type) return this.fail(t, `task type ${t.taskType} is not registered`, 'no_type');
    const now = this.clock.now();
    const url = t.workerUrl ?? '';
    const opts: CallOptions = { fence: t.fence, requestId: `${t.taskId}/${t.attempt}/poll` };
    // A sync run has a bound even without a deadline: the same one its run call is given.
    const deadlineS =
      t.deadlineSecond ??
      type.deadlineSecond ??
      (type.blocking === BlockingKind.SYNC ? DEFAULT_SYNC_RUN_SECONDS : null);
    if (deadlineS !== null && t.startedAt !== null && now - t.startedAt > deadlineS * 1000) {
      await this.client
        .notify(url, t.taskType, t.taskId, { event: NotifyEvent.DEADLINE }, opts)
        .catch(() => undefined);
      return this.timeout(
        t,
        type,
        type.timeoutPolicy.deadline,
        `ran past its deadline of ${deadlineS} s`,
      );
    }
    try {
      const [task] = await this.client.query(url, t.taskType, { task_id: t.taskId }, opts);
      // Created and run in one call that never reached the worker (the scheduler died first).
      if (!task && this.createsAndRuns(type)) return this.resumeRun(t, type, true);
      if (!task) return this.workerLostTask(t, 'the worker does not know the task');
      if (task.attempt !== t.attempt)
        return this.workerLostTask(t, `the worker has attempt ${task.attempt}, not ${t.attempt}`);
      if (task.task_status === TaskStatus.CREATE || task.task_status === TaskStatus.PREPARE) {
        // RUNNING here but the run call never reached the worker (the scheduler that sent it died
        // between its RUNNING write and the call): the attempt has not started there, so run it.
        return this.resumeRun(t, type);
      }
      if (task.task_status === TaskStatus.SUCCESS || task.task_status === TaskStatus.FAIL) {
        // Under our claim, driven on from the row the step returns; the outcome is the worker's.
        const next = await this.step(
          t,
          this.outcomeChange(t, task.task_status, task.result, task.error, 'worker reported'),
          `worker:${t.workerId ?? 'unknown'}`,
        );
        return next ?? REST;
      }
      const hb = await this.client.heartbeat(url, t.taskType, t.taskId, opts);
      const patch: TaskPatch = {
        dueAt: now + this.config.checker.pollIntervalMs,
        owner: null,
        leaseUntil: null,
      };
      if (hb.alive) patch.heartbeatAt = now;
      if (task.progress)
        patch.progress = {
          percent: task.progress.percent,
          step: task.progress.step,
          message: task.progress.message,
        };
      const lastBeat = hb.alive ? now : (t.heartbeatAt ?? t.startedAt ?? now);
      if (
        !hb.alive &&
        task.task_status === TaskStatus.RUNNING &&
        now - lastBeat > type.heartbeatTimeoutMs
      ) {
        return this.timeout(
          t,
          type,
          type.timeoutPolicy.heartbeat,
          `no heartbeat for ${now - lastBeat} ms`,
        );
      }
      await this.step(t, { patch, reason: 'polled' });
      return REST;
    } catch (err) {
      if (err instanceof StaleFenceError) return REST;
      if (err instanceof TaskNotFoundError)
        return this.workerLostTask(t, 'the worker does not know the task');
      if (err instanceof WorkerUnavailableError || err instanceof WorkerTimeoutError) {
        if (t.workerId) await this.workers.reportFailure(t.workerId);
        const lastBeat = t.heartbeatAt ?? t.startedAt ?? now;
        if (now - lastBeat > type.heartbeatTimeoutMs) {
          return this.timeout(
            t,
            type,
            type.timeoutPolicy.heartbeat,
            `worker unreachable and no heartbeat for ${now - lastBeat} ms: ${message(err)}`,
          );
        }
        await this.step(t, {
          patch: { dueAt: now + this.config.checker.pollIntervalMs, owner: null, leaseUntil: null },
          reason: 'poll failed',
        });
        return REST;
      }
      throw err;
    }
  }

  /**
   * Sends the run call of the current attempt again, to the worker that has the attempt (with
   * `create`: the create-and-run call, to a worker that never got it).
   */
  private async resumeRun(t: TaskModel, type: TaskTypeModel, create = false): Promise<Step> {
    const worker = t.workerId ? await this.workers.find(t.workerId) : undefined;
    if (!worker || worker.url !== t.workerUrl)
      return this.workerLostTask(t, `worker ${t.workerId ?? '?'} of attempt ${t.attempt} is gone`);
    const renewed = await this.step(t, {
      patch: { heartbeatAt: this.clock.now() },
      reason: `the run call of attempt ${t.attempt} never reached ${worker.workerId}; run again`,
    });
    if (!renewed) return REST;
    this.logger.warn(
      `task ${t.taskId}: the run call of attempt ${t.attempt} never reached ${worker.workerId}; sending it again`,
    );
    this.workers.acquireSlot(worker.workerId);
    try {
      return create
        ? await this.sendCreateAndRun(renewed, type, worker)
        : await this.runOnWorker(renewed, type, worker);
    } finally {
      this.workers.releaseSlot(worker.workerId);
    }
  }

  /** NONE: the worker forgot the task (restart without a store): create it again. */
  private async workerLostTask(t: TaskModel, why: string): Promise<Step> {
    const next = await this.step(t, {
      to: TaskStatus.NONE,
      patch: { dueAt: this.clock.now() },
      reason: why,
    });
    return next ?? REST;
  }

  private async timeout(
    t: TaskModel,
    type: TaskTypeModel,
    policy: TimeoutPolicy,
    why: string,
  ): Promise<Step> {
    if (policy === 'alert') {
      // Only tell people: an event row, and the task goes on as it was.
      await this.step(t, {
        patch: {
          dueAt: this.clock.now() + this.config.checker.pollIntervalMs,
          owner: null,
          leaseUntil: null,
        },
        reason: `alert: ${why}`,
        note: true,
      });
      this.logger.warn(`task ${t.taskId}: ${why}`);
      return REST;
    }
    if (t.workerUrl) {
      await this.client
        .notify(
          t.workerUrl,
          t.taskType,
          t.taskId,
          { event: NotifyEvent.CANCEL, message: why },
          { fence: t.fence },
        )
        .catch(() => undefined);
    }
    return this.failed(t, type, why, policy === 'retry');
  }

  /** An attempt failed: retry with backoff while attempts remain, else the final failure. */
  private async failed(
    t0: TaskModel,
    type: TaskTypeModel,
    why: string,
    retryable = true,
  ): Promise<Step> {
    // Before planning another attempt or life.
    const t = retryable || this.keptAlive(t0) ? await this.withCancelFlag(t0) : t0;
    if (t.status === TaskStatus.SUCCESS) {
      // The next life of a permanent task could not start (the worker refused it, ...).
      await this.leases.release(t.taskId);
      if (this.keptAlive(t)) return this.awaitNextLife(t, type, 'restart failed', why);
      return this.clean(t, TaskStatus.SUCCESS);
    }
    const maxRetry = t.maxRetry >= 0 ? t.maxRetry : type.maxRetry;
    // A permanent task is restarted whatever ended its life, until it is cancelled.
    const restart = this.keptAlive(t);
    const retry = restart || (retryable && !t.cancelRequested && t.attempt <= maxRetry);
    const now = this.clock.now();
    const wait = restart ? this.restartBackoff(t, type, now) : this.backoff(type, t.attempt);
    const next = await this.step(t, {
      to: TaskStatus.FAIL,
      patch: retry
        ? {
            error: { message: why },
            outcome: null,
            pendingAction: null,
            dueAt: now + wait,
            owner: null,
            leaseUntil: null,
          }
        : { error: { message: why }, outcome: TaskStatus.FAIL, pendingAction: null, dueAt: now },
      attemptEnd: { outcome: TaskStatus.FAIL, error: why },
      reason: restart
        ? `life ${t.attempt} of a permanent task ended (${why}); restart ${t.attempt} in ${wait} ms`
        : retry
          ? `attempt ${t.attempt} failed (${why}); retry ${t.attempt} of ${maxRetry}`
          : `failed: ${why}`,
    });
    if (next && restart) this.metrics.inc('baton_permanent_restarts_total', { type: t.taskType });
    if (!next) return REST;
    if (retry) await this.leases.release(t.taskId);
    return retry ? REST : next;
  }

  /** A failure with no attempt behind it (bad type, refused params). */
  private async fail(t: TaskModel, why: string, code: string): Promise<Step> {
    if (t.status === TaskStatus.SUCCESS) {
      await this.leases.release(t.taskId);
      if (this.keptAlive(t)) return this.awaitNextLife(t, undefined, 'restart failed', why);
      return this.clean(t, TaskStatus.SUCCESS);
    }
    const next = await this.step(t, {
      to: TaskStatus.FAIL,
      patch: { error: { message: why, code }, outcome: TaskStatus.FAIL, dueAt: this.clock.now() },
      reason: `failed: ${why}`,
    });
    return next ?? REST;
  }

  /** FAIL is due: a retry (outcome not set) or the final failure to roll back and clean. */
  private async afterFailure(t: TaskModel): Promise<Step> {
    const type = await this.types.find(t.taskType);
    if (t.pendingAction === 'decide') {
      if (!type) return this.fail(t, `task type ${t.taskType} is not registered`, 'no_type');
      return this.failed(t, type, t.error?.message ?? 'run failed');
    }
    if (t.outcome === null && !t.cancelRequested && t.pendingAction !== 'rollback')
      return this.startAttempt({ ...t });
    const wantsRollback = t.pendingAction === 'rollback' || (type?.rollbackOnFail ?? false);
    if (wantsRollback && type?.implements.includes(ContractCall.ROLLBACK) && t.workerUrl) {
      try {
        await this.client.rollback(t.workerUrl, t.taskType, t.taskId, { fence: t.fence });
      } catch (err) {
        if (!(err instanceof NotImplementedError))
          return this.retryLater(t, `rollback failed: ${message(err)}`);
      }
      const next = await this.step(t, {
        to: TaskStatus.ROLLBACK,
        patch: { outcome: TaskStatus.ROLLBACK, pendingAction: null },
        reason: 'rolled back',
      });
      return next ?? REST;
    }
    return this.clean(t, TaskStatus.FAIL);
  }

  /** After an outcome: release resources on the worker and here, then FINISH. */
  private async clean(t: TaskModel, outcome: TaskStatus): Promise<Step> {
    const type = await this.types.find(t.taskType);
    if (t.pendingAction === 'rollback' && outcome === TaskStatus.SUCCESS)
      return this.afterFailure(t);
    // A permanent task between lives is not cleaned on the worker (a retry is not either): the
    // worker takes its next attempt from SUCCESS; the clean comes when the task really ends.
    if (outcome === TaskStatus.SUCCESS && this.keptAlive(t)) {
      await this.leases.release(t.taskId);
      return this.awaitNextLife(t, type, 'success');
    }
    if (type?.implements.includes(ContractCall.CLEAN) && t.workerUrl) {
      try {
        await this.client.clean(t.workerUrl, t.taskType, t.taskId, { fence: t.fence });
      } catch (err) {
        if (err instanceof StaleFenceError) return REST;
        // The worker forgot the task or cannot be reached: nothing of ours to release there.
        if (!(
          err instanceof TaskNotFoundError ||
          err instanceof WorkerUnavailableError ||
          err instanceof WorkerCallError
        ))
          throw err;
        this.logger.warn(`clean of ${t.taskId} failed: ${message(err)}`);
      }
    }
    await this.leases.release(t.taskId);
    const now = this.clock.now();
    await this.step(t, {
      to: TaskStatus.FINISH,
      patch: {
        outcome: t.outcome ?? outcome,
        finishedAt: now,
        dueAt: null,
        owner: null,
        leaseUntil: null,
      },
      reason: `cleaned up (${t.outcome ?? outcome})`,
    });
    return REST;
  }

  // ---- helpers -----------------------------------------------------------------------------

  private async callFailed(
    t: TaskModel,
    type: TaskTypeModel,
    worker: WorkerModel,
    err: unknown,
    call: string,
    attemptStarted: boolean,
  ): Promise<Step> {
    if (err instanceof StaleFenceError) {
      // Another scheduler holds a newer claim and already spoke to the worker: stand down.
      return REST;
    }
    if (err instanceof WorkerUnavailableError || err instanceof WorkerTimeoutError) {
      await this.workers.reportFailure(worker.workerId);
      if (!attemptStarted) {
        await this.leases.release(t.taskId);
        return this.postpone(
          t,
          this.clock.now() + this.backoff(type, 1),
          `${call} on ${worker.workerId} failed: ${message(err)}`,
        );
      }
    }
    return this.failed(
      t,
      type,
      `${call} on ${worker.workerId} failed: ${message(err)}`,
      !(err instanceof WorkerCallError) ||
        err instanceof WorkerUnavailableError ||
        err instanceof WorkerTimeoutError,
    );
  }

  /**
   * The task may not start yet. A first start waits in POSTPONE; a retry (FAIL) or a re-create
   * (NONE) waits where it is, since the table has no move from there to POSTPONE (and a retry
   * stays in the retry lane): the wait and its reason are logged as an event either way.
   */
  private async postpone(t: TaskModel, until: number, why: string): Promise<Step> {
    const patch = { dueAt: until, owner: null, leaseUntil: null };
    await this.step(
      t,
      canTransition(t.status, TaskStatus.POSTPONE)
        ? { to: TaskStatus.POSTPONE, patch, reason: why }
        : { patch, reason: `waiting: ${why}`, note: true },
    );
    return REST;
  }

  private async retryLater(t: TaskModel, why: string): Promise<Step> {
    await this.step(t, {
      patch: {
        dueAt: this.clock.now() + this.config.checker.pollIntervalMs,
        owner: null,
        leaseUntil: null,
      },
      reason: why,
    });
    this.logger.warn(`task ${t.taskId}: ${why}`);
    return REST;
  }

  private async release(t: TaskModel, why: string): Promise<Step> {
    await this.step(t, { patch: { owner: null, leaseUntil: null, dueAt: null }, reason: why });
    return REST;
  }

  /** One compare-and-set step; undefined when the task changed under us (we stop driving). */
  private async step(
    t: TaskModel,
    change: Omit<TaskChange, 'actor'>,
    actor = this.actor,
    onlyIf?: (latest: TaskModel) => boolean,
  ): Promise<TaskModel | undefined> {
    return this.stepLock.run(t.taskId, async () => {
      // A lease renewal may have moved the row on since `t` was read: only the lease changed then.
      const latest = this.latest.get(t.taskId);
      if (onlyIf && !onlyIf(latest ?? t)) return undefined;
      const base =
        latest && latest.version > t.version
          ? { ...t, version: latest.version, leaseUntil: latest.leaseUntil }
          : t;
      const next = await this.tasks.apply(base, { ...change, actor }, this.clock.now());
      if (next) this.latest.set(t.taskId, next);
      else this.logger.debug(`task ${t.taskId}: ${LOST_RACE}`);
      return next;
    });
  }

  /**
   * Renews the task's claim every third of its lease until stopped, or until the drive has gone
   * on past any bound its calls have (the run's deadline plus a few call timeouts): a drive stuck
   * on a call that never settles lets its claim lapse, and the Checker brings the task back.
   */
  private renewWhileDriving(
    t: TaskModel,
    type: TaskTypeModel | undefined,
  ): { stop(): Promise<void> } {
    const { claimLeaseMs, callTimeoutMs } = this.config.runner;
    const every = Math.max(50, Math.floor(claimLeaseMs / 3));
    const giveUpAt = this.clock.now() + this.syncRunTimeoutMs(t, type) + 10 * callTimeoutMs;
    const timer = setInterval(() => {
      if (this.clock.now() > giveUpAt) {
        clearInterval(timer);
        this.logger.warn(`task ${t.taskId}: its drive outlasted every bound; the claim may lapse`);
        return;
      }
      void this.step(
        this.latest.get(t.taskId) ?? t,
        { patch: { leaseUntil: this.clock.now() + claimLeaseMs }, reason: 'lease renewed' },
        this.actor,
        // Checked under the step lock: a step that let the task rest gave the claim up.
        (latest) => latest.owner === this.config.instanceId,
      ).catch((err: unknown) =>
        this.logger.warn(`renewing the claim of ${t.taskId}: ${message(err)}`),
      );
    }, every);
    return {
      stop: async () => {
        clearInterval(timer);
        // A renewal in flight finishes before the next drive reads `latest`.
        await this.stepLock.run(t.taskId, async () => undefined);
      },
    };
  }

  private rateLimits(t: TaskModel, type: TaskTypeModel): RateLimit[] {
    const limits: RateLimit[] = [];
    if (type.rateLimitPerSec !== null)
      limits.push({ key: `type:${t.taskType}`, perSecond: type.rateLimitPerSec });
    const { tenantRates, tenantRateDefault } = this.config.dispatcher;
    const tenantRate = tenantRates[t.tenant] ?? tenantRateDefault;
    if (tenantRate > 0) limits.push({ key: `tenant:${t.tenant}`, perSecond: tenantRate });
    return limits;
  }

  /**
   * A permanent task waits in SUCCESS for its next life: after a life that succeeded, or after a
   * start of the next life that failed before the worker took it (the table has no SUCCESS -> FAIL).
   */
  private async awaitNextLife(
    t: TaskModel,
    type: TaskTypeModel | undefined,
    ended: string,
    error?: string,
  ): Promise<Step> {
    const now = this.clock.now();
    const wait = type ? this.restartBackoff(t, type, now) : this.config.checker.pollIntervalMs;
    const next = await this.step(t, {
      patch: {
        pendingAction: 'restart',
        dueAt: now + wait,
        owner: null,
        leaseUntil: null,
        ...(error !== undefined ? { error: { message: error } } : {}),
      },
      reason:
        error === undefined
          ? `life ${t.attempt} of a permanent task ended (${ended}); restart ${t.attempt} in ${wait} ms`
          : `restart ${t.attempt} of a permanent task failed (${error}); again in ${wait} ms`,
      note: true,
    });
    if (next && error === undefined)
      this.metrics.inc('baton_permanent_restarts_total', { type: t.taskType });
    return REST;
  }

  /**
   * The task with its cancel flag read again: a cancel may have been recorded beside this drive
   * (TasksRepository.requestCancel), which moves no version and so is not in the model we hold.
   */
  private async withCancelFlag(t: TaskModel): Promise<TaskModel> {
    if (t.cancelRequested) return t;
    return { ...t, cancelRequested: await this.tasks.cancelRequested(t.taskId) };
  }

  /** A permanent task that nobody cancelled: every end of a life starts the next one. */
  private keptAlive(t: TaskModel): boolean {
    return t.repetition === RepetitionKind.PERMANENT && !t.cancelRequested;
  }

  /**
   * The wait before a permanent task's next life: the type's backoff, growing while lives end
   * quickly (a crash loop), back to the base after a life that lasted longer than the longest wait.
   */
  private restartBackoff(t: TaskModel, type: TaskTypeModel, now: number): number {
    const lived = t.startedAt === null ? 0 : now - t.startedAt;
    return this.backoff(type, lived >= type.backoffMaxMs ? 1 : t.attempt);
  }

  /** Exponential backoff with equal jitter: half fixed, half random. */
  private backoff(type: TaskTypeModel, attempt: number): number {
    const exp = Math.min(type.backoffMaxMs, type.backoffBaseMs * 2 ** Math.max(0, attempt - 1));
    return Math.round(exp / 2 + Math.random() * (exp / 2));
  }

  private createBody(t: TaskModel, attempt: number): CreateTaskRequestDto {
    return {
      task_id: t.taskId,
      attempt,
      create_info: {
        task_type: t.taskType,
        task_name: t.taskName,
        important_level: t.priority,
        ...(t.workerUrl ? { http_url: t.workerUrl } : {}),
        ...(t.parentTaskId ? { parent_task_id: t.parentTaskId } : {}),
        ...(t.controlTaskId ? { control_task_id: t.controlTaskId } : {}),
      },
      process_arg: {
        ...(t.startTime !== null ? { start_time: new Date(t.startTime).toISOString() } : {}),
        ...(t.deadlineSecond !== null ? { deadline_second: t.deadlineSecond } : {}),
        ...(t.lockTimeout !== null ? { lock_timeout: t.lockTimeout } : {}),
        max_retry: Math.max(0, t.maxRetry),
      },
      params: t.params,
      lock_keys: t.lockKeys,
    };
  }
}
