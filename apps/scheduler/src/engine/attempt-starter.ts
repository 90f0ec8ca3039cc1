import { Inject, Injectable, Logger } from '@nestjs/common';
import { LOCK_PROVIDER, Lease, LockProvider } from '@baton/locks';
import { Clock, TaskLog } from '../common';
import { Metrics } from '../metrics';
import { TaskModel, TasksRepository } from '../task-store';
import { TaskTypeModel, TaskTypesService } from '../task-types';
import { TenantLimits, TenantLimitsService } from '../tenants';
import { WorkerModel, WorkersService } from '../workers';
import { AttemptRunner } from './attempt-runner';
import { Step } from './engine-rules';
import {
  WaitReason,
  sameAttempt as isSameAttempt,
  queueTimeout,
  startTimeWait,
  startWaitUntil,
} from './decide';
import { FailurePolicy } from './failure-policy';
import { RateLimit, RateLimiter } from './rate-limiter';
import { OWN_LEASE_WAIT, ResourceLeases } from './resource-leases';
import { TaskSteps } from './task-steps';

/** Longest wait for a concurrency gate another start holds (its count and one write). */
const GATE_WAIT_MS = 5000;

/**
 * The concurrency gates one start holds, from its count until its attempt is written: a lease in
 * the lock backend per limited type and tenant, so starts on every instance take turns there.
 */
class Gate {
  private lease: Lease | undefined;

  constructor(private readonly locks: LockProvider) {}

  /** Enters the gates of `keys` (all or none); false when another start kept them too long. */
  async enter(keys: string[]): Promise<boolean> {
    if (keys.length === 0) return true;
    this.lease = await this.locks
      .acquire(
        keys.map((k) => `concurrency:${k}`),
        { ttlMs: 10_000, waitMs: GATE_WAIT_MS },
      )
      .catch(() => undefined);
    return this.lease !== undefined;
  }

  leave(): void {
    const lease = this.lease;
    this.lease = undefined;
    void lease?.release().catch(() => undefined);
  }
}

/**
 * Whether an attempt may start now, and on which worker: start time, rate limits, the queue
 * timeout, the type's concurrency, the task's lock keys, a healthy worker with a free slot.
 * Whatever stands in the way, the task waits (POSTPONE) with the reason logged.
 */
@Injectable()
export class AttemptStarter {
  private readonly logger = new Logger('TaskEngine');

  constructor(
    private readonly tasks: TasksRepository,
    private readonly types: TaskTypesService,
    private readonly tenants: TenantLimitsService,
    private readonly workers: WorkersService,
    private readonly leases: ResourceLeases,
    private readonly limiter: RateLimiter,
    private readonly steps: TaskSteps,
    private readonly policy: FailurePolicy,
    private readonly attempts: AttemptRunner,
    private readonly clock: Clock,
    @Inject(LOCK_PROVIDER) private readonly locks: LockProvider,
    private readonly metrics: Metrics,
  ) {}

  /** The task waits in POSTPONE until `until`, counted by what stands in the way. */
  private wait(t: TaskModel, until: number, reason: WaitReason, why: string): Promise<Step> {
    this.metrics.inc('baton_task_start_waits_total', { task_type: t.taskType, reason });
    return this.steps.postpone(t, until, reason, why);
  }

  /**
   * The task waits for a lock key that `holder` holds (undefined: a holding that names no task).
   * Lock keys name real resources, shared by every tenant; another tenant's task is not named.
   */
  private async waitOnKey(t: TaskModel, until: number, holder: string | undefined): Promise<Step> {
    const keys = t.lockKeys.join(', ');
    if (holder === undefined) return this.wait(t, until, 'lock_key', `lock key held: ${keys}`);
    // Its own lease, kept by the instance of an earlier drive that lost its claim (a stall), or
    // of the drive before a poll elsewhere: that instance's Checker lets it go once it reads
    // this wait on the row.
    if (holder === t.taskId)
      return this.wait(t, until, 'lock_key', `${OWN_LEASE_WAIT}, let go by its instance: ${keys}`);
    const ours = (await this.tasks.tenantOf(holder)) === t.tenant;
    const who = ours ? `task ${holder}` : 'a task of another tenant';
    return this.wait(t, until, 'lock_key', `lock key held by ${who}: ${keys}`);
  }

  /** INIT, POSTPONE, NONE, or a re-drive of CREATE/PREPARE after a crash: (re)create on a worker and run. */
  async startAttempt(t: TaskModel): Promise<Step> {
    const gate = new Gate(this.locks);
    try {
      return await this.tryStart(t, gate);
    } finally {
      gate.leave();
    }
  }

  private async tryStart(t: TaskModel, gate: Gate): Promise<Step> {
    const type = await this.types.find(t.taskType);
    if (!type) return this.policy.noType(t);
    const now = this.clock.now();
    // The worker is called on the start time itself (runAttempt), with the checks and the opening
    // write done a moment before it.
    const early = startTimeWait(t, now);
    if (early) return this.wait(t, early.until, early.reason, early.why);
    // Rate limits (per task type, per tenant, over the fleet): a start over the limit waits in
    // POSTPONE until the slot reserved for it.
    const tenant = await this.tenants.of(t.tenant);
    const limits = this.rateLimits(t, type, tenant);
    if (limits.length > 0) {
      const wait = await this.limiter.take(t.taskId, limits);
      if (wait > 0)
        return this.wait(
          t,
          now + wait,
          'rate_limit',
          `rate limit: ${limits.map((l) => `${l.key} at ${l.perSecond}/s`).join(', ')}`,
        );
    }
    const late = queueTimeout(t, type, now);
    if (late?.policy === 'fail') return this.policy.fail(t, late.why, 'queue_timeout');
    if (late) this.logger.warn(TaskLog.line(t.taskId, t.attempt, `task ${t.taskId}: ${late.why}`));
    // Concurrency limits: the count and the write that binds the attempt to its worker are one
    // step per type (and tenant) over the fleet, so starts at the same moment cannot all pass a
    // count that none of them is in yet.
    const gated = await gate.enter([
      ...(type.concurrencyLimit !== null ? [`type:${t.taskType}`] : []),
      ...(tenant.concurrency !== null ? [`tenant:${t.tenant}`] : []),
    ]);
    if (!gated)
      return this.wait(
        t,
        startWaitUntil(type, now),
        'concurrency_limit',
        `concurrency limit: the count of ${t.taskType} / tenant ${t.tenant} is busy`,
      );
    if (
      type.concurrencyLimit !== null &&
      (await this.tasks.countStarted({ taskType: t.taskType }, t.taskId)) >= type.concurrencyLimit
    ) {
      return this.wait(
        t,
        startWaitUntil(type, now),
        'concurrency_limit',
        `${t.taskType} is at its concurrency limit of ${type.concurrencyLimit}`,
      );
    }
    if (
      tenant.concurrency !== null &&
      (await this.tasks.countStarted({ tenant: t.tenant }, t.taskId)) >= tenant.concurrency
    ) {
      return this.wait(
        t,
        startWaitUntil(type, now),
        'concurrency_limit',
        `tenant ${t.tenant} is at its concurrency limit of ${tenant.concurrency}`,
      );
    }
    if (t.lockKeys.length > 0) {
      const held = await this.leases.acquire(t.taskId, t.lockKeys, (t.lockTimeout ?? 60) * 1000);
      if (!held) {
        // Named as the locks view names it: the holding's label, read from the lock backend.
        const holder = await this.leases.holderOf(t.lockKeys);
        return this.waitOnKey(t, startWaitUntil(type, now), holder);
      }
      // The lease says no other starter is here now; the rows say whether a task that started
      // before still holds a key (its scheduler died and the lease ran out while it runs on), or
      // a live worker may still run an attempt given up with the key (its drop not yet told).
      const holder = await this.tasks.lockKeyHolder(t.lockKeys, t.taskId, this.workers.liveSince());
      if (holder !== undefined) {
        await this.leases.release(t.taskId);
        return this.waitOnKey(t, startWaitUntil(type, now), holder);
      }
    }
    // A re-drive goes back to the worker that already has the attempt, whatever the type's
    // version rules or a drain say now (they keep new attempts away, not the one it has); a new
    // attempt goes to a worker they allow.
    const sameAttempt = isSameAttempt(t);
    const worker =
      sameAttempt && t.workerUrl
        ? await this.workers.pickBound(t.taskType, t.workerUrl)
        : await this.pickForNewAttempt(t);
    if (!worker) {
      await this.leases.release(t.taskId);
      return this.wait(
        t,
        startWaitUntil(type, now),
        'no_worker',
        sameAttempt
          ? `worker ${t.workerId ?? '?'} of attempt ${t.attempt} is not healthy or has no free slot`
          : `no ${t.taskType} worker that may take it has a free slot (GET /v1/workers says why a worker is left out)`,
      );
    }
    const attempt = sameAttempt ? t.attempt : t.attempt + 1;
    this.workers.acquireSlot(worker.workerId);
    try {
      return await this.attempts.runAttempt(t, type, worker, attempt, () => gate.leave());
    } finally {
      this.workers.releaseSlot(worker.workerId);
    }
  }

  /**
   * A new attempt goes to the requested worker if the task names one; otherwise to another worker
   * than the last attempt's when there is one with room (that one failed it, refused it, or could
   * not be reached), else to any.
   */
  private async pickForNewAttempt(t: TaskModel): Promise<WorkerModel | undefined> {
    const taskId = t.taskId;
    if (t.requestedUrl) return this.workers.pick(t.taskType, { taskId, url: t.requestedUrl });
    if (t.workerId) {
      const other = await this.workers.pick(t.taskType, { taskId, exclude: [t.workerId] });
      if (other) return other;
    }
    return this.workers.pick(t.taskType, { taskId });
  }

  private rateLimits(t: TaskModel, type: TaskTypeModel, tenant: TenantLimits): RateLimit[] {
    const limits: RateLimit[] = [];
    if (type.rateLimitPerSec !== null)
      limits.push({ key: `type:${t.taskType}`, perSecond: type.rateLimitPerSec });
    if (tenant.ratePerSec !== null)
      limits.push({ key: `tenant:${t.tenant}`, perSecond: tenant.ratePerSec });
    return limits;
  }
}
