import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { EnqueueTracker, QueueLanes } from '../queue';
import { EARLY_CLAIM_MS, TaskEngine } from '../engine';

type Lane = 'main' | 'retry';

const IDLE_WAIT_MS = 20;

/** Future due times remembered for a precise wake-up; beyond this the idle poll covers them. */
const MAX_WAKES = 10_000;
const ACK_BATCH = 100;
const ACK_DELAY_MS = 5;

/**
 * The Scheduler (runner) module: pulls due tasks from the queue, at most `concurrency` at once,
 * and lets the engine drive each. The queue claim only says "look at this now"; the engine's
 * database claim decides who drives, so a duplicate entry costs a read, never a second run.
 */
@Injectable()
export class RunnerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Runner');
  private active = 0;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private wake: (() => void) | undefined;
  /** A nudge came while the loop was not idle (mid-claim): its next idle returns at once. */
  private nudged = false;
  private readonly pendingAcks: Record<Lane, string[]> = { main: [], retry: [] };
  /** Entries this runner holds (claimed, not acked): their queue leases are extended. */
  private readonly held: Record<Lane, Set<string>> = { main: new Set(), retry: new Set() };
  private extender: NodeJS.Timeout | undefined;
  private activeRetries = 0;
  private ackTimer: NodeJS.Timeout | undefined;
  /** Future due times of entries this process enqueued, ascending, and the timer for the first. */
  private wakes: number[] = [];
  private wakeTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly engine: TaskEngine,
    private readonly tracker: EnqueueTracker,
    private readonly lanes: QueueLanes,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.lanes.onEnqueued((dueAt) => this.wakeAt(dueAt));
    this.loop = this.run();
    // A drive may outlast the queue lease (a long sync run): every third of it, the leases of
    // all held entries are extended in one call per lane, so the Checker requeues only the
    // entries of a runner that stopped.
    const every = Math.max(50, Math.floor(this.config.runner.claimLeaseMs / 3));
    this.extender = setInterval(() => void this.extendHeld(), every);
    this.extender.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    if (this.extender) clearInterval(this.extender);
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wake?.();
    await this.loop;
    await Promise.allSettled([...this.inFlight]);
    await this.flushAcks();
  }

  /** Something was enqueued: look now instead of at the next idle tick. */
  nudge(): void {
    if (this.wake) this.wake();
    else this.nudged = true;
  }

  /**
   * An entry falls due at `dueAt`: look then, not at the next idle tick (a timed task starts on
   * its slot). One timer, set for the earliest remembered time.
   */
  private wakeAt(dueAt: number): void {
    const now = Date.now();
    if (dueAt - EARLY_CLAIM_MS <= now) return this.nudge();
    if (this.wakes.length >= MAX_WAKES) return;
    let lo = 0;
    let hi = this.wakes.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.wakes[mid] < dueAt) lo = mid + 1;
      else hi = mid;
    }
    if (this.wakes[lo] === dueAt) return;
    this.wakes.splice(lo, 0, dueAt);
    if (lo === 0) this.armWake();
  }

  private armWake(): void {
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    if (this.wakes.length === 0 || this.stopping) return;
    this.wakeTimer = setTimeout(
      () => {
        this.wakeTimer = undefined;
        const now = Date.now();
        let n = 0;
        while (n < this.wakes.length && this.wakes[n] - EARLY_CLAIM_MS <= now) n++;
        this.wakes.splice(0, n);
        this.nudge();
        this.armWake();
      },
      this.wakes[0] - EARLY_CLAIM_MS - Date.now(),
    );
    this.wakeTimer.unref();
  }

  private async run(): Promise<void> {
    const { concurrency, claimLeaseMs, retrySharePercent } = this.config.runner;
    const retrySlots = Math.max(1, Math.floor((concurrency * retrySharePercent) / 100));
    while (!this.stopping) {
      const free = concurrency - this.active;
      if (free <= 0) {
        await this.idle();
        continue;
      }
      let fresh;
      let retries;
      this.nudged = false;
      try {
        const early = Date.now() + EARLY_CLAIM_MS;
        fresh = await this.lanes.main.claim(Math.min(free, 256), claimLeaseMs, early);
        // Retries get what is left, and never more than their share of the slots.
        const retryFree = Math.min(free - fresh.length, retrySlots - this.activeRetries);
        retries =
          retryFree > 0
            ? await this.lanes.retry.claim(Math.min(retryFree, 256), claimLeaseMs, early)
            : [];
      } catch (err) {
        this.logger.error(`queue claim failed: ${String(err)}`);
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (fresh.length === 0 && retries.length === 0) {
        await this.idle();
        continue;
      }
      for (const entry of fresh) this.start(entry.taskId, 'main');
      for (const entry of retries) this.start(entry.taskId, 'retry');
    }
  }

  private start(taskId: string, lane: Lane): void {
    this.active++;
    this.held[lane].add(taskId);
    if (lane === 'retry') this.activeRetries++;
    const job = this.engine
      .drive(taskId)
      .catch((err: unknown) => this.logger.error(`task ${taskId}: ${String(err)}`))
      .then(() => this.ack(taskId, lane))
      .finally(() => {
        this.held[lane].delete(taskId);
        this.tracker.forget(taskId);
        this.active--;
        if (lane === 'retry') this.activeRetries--;
        this.inFlight.delete(job);
        this.wake?.();
      });
    this.inFlight.add(job);
  }

  /**
   * Acks go to the queue in batches (one round trip for many tasks). An ack lost to a crash only
   * means the entry comes back after its lease, and the database claim settles it.
   */
  private ack(taskId: string, lane: Lane): void {
    const pending = this.pendingAcks[lane];
    pending.push(taskId);
    if (pending.length >= ACK_BATCH) void this.flushAcks();
    else this.ackTimer ??= setTimeout(() => void this.flushAcks(), ACK_DELAY_MS);
  }

  private async extendHeld(): Promise<void> {
    for (const lane of ['main', 'retry'] as const) {
      const ids = [...this.held[lane]];
      if (ids.length === 0) continue;
      const queue = lane === 'main' ? this.lanes.main : this.lanes.retry;
      await queue
        .extend(ids, this.config.runner.claimLeaseMs)
        .catch((err: unknown) =>
          this.logger.warn(`extending ${ids.length} ${lane} entries failed: ${String(err)}`),
        );
    }
  }

  private async flushAcks(): Promise<void> {
    if (this.ackTimer) clearTimeout(this.ackTimer);
    this.ackTimer = undefined;
    for (const lane of ['main', 'retry'] as const) {
      const ids = this.pendingAcks[lane].splice(0);
      if (ids.length === 0) continue;
      const queue = lane === 'main' ? this.lanes.main : this.lanes.retry;
      await queue
        .ack(ids)
        .catch((err: unknown) =>
          this.logger.warn(`ack of ${ids.length} ${lane} entries failed: ${String(err)}`),
        );
    }
  }

  private idle(): Promise<void> {
    if (this.nudged) {
      this.nudged = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, IDLE_WAIT_MS);
      this.wake = done;
    });
  }
}
