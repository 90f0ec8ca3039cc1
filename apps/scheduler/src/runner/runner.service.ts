import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { Clock, Overload, ShutdownDeadline, Timer } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { EnqueueTracker, LANES, Lane, QueueLanes } from '../queue';
import { EARLY_CLAIM_MS, TaskEngine } from '../engine';

const IDLE_WAIT_MS = 20;

/** Future due times remembered for a precise wake-up; beyond this the idle poll covers them. */
const MAX_WAKES = 10_000;
/** How long after main-lane work was last claimed the overflow lane keeps leaving a reserve. */
const RESERVE_HOLD_MS = 2000;
const ACK_BATCH = 100;
const ACK_DELAY_MS = 5;
/**
 * A full runner refills when this many slots are free, or this long after the first one freed:
 * a claim per finished task cost three queue round trips per task under a backlog.
 */
const REFILL_BATCH_MAX = 32;
const REFILL_DELAY_MS = 2;

/**
 * The Scheduler (runner) module: pulls due tasks from the queue, at most `concurrency` at once,
 * and lets the engine drive each. The queue claim only says "look at this now"; the engine's
 * database claim decides who drives, so a duplicate entry costs a read, never a second run.
 */
@Injectable()
export class RunnerService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Runner');
  private active = 0;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private wake: (() => void) | undefined;
  /** Why the loop waits: every slot taken (a finished run wakes it), or nothing to claim. */
  private waitingFor: 'slots' | 'work' = 'work';
  private refillTimer: Timer | undefined;
  /** A nudge came while the loop was not idle (mid-claim): its next idle returns at once. */
  private nudged = false;
  private readonly pendingAcks: Record<Lane, string[]> = { main: [], retry: [], overflow: [] };
  /** Entries this runner holds (claimed, not acked): their queue leases are extended. */
  private readonly held: Record<Lane, Set<string>> = {
    main: new Set(),
    retry: new Set(),
    overflow: new Set(),
  };
  private extender: Timer | undefined;
  private activeRetries = 0;
  /** When main-lane work was last claimed: while it keeps coming, overflow leaves a reserve. */
  private lastMainAt = 0;
  private ackTimer: Timer | undefined;
  /** Future due times of entries this process enqueued, ascending, and the timer for the first. */
  private wakes: number[] = [];
  private wakeTimer: Timer | undefined;

  constructor(
    private readonly engine: TaskEngine,
    private readonly tracker: EnqueueTracker,
    private readonly lanes: QueueLanes,
    private readonly overload: Overload,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.lanes.onEnqueued((dueAt) => this.wakeAt(dueAt));
    this.loop = this.run();
    // A drive may outlast the queue lease (a long sync run): every third of it, the leases of
    // all held entries are extended in one call per lane, so the Checker requeues only the
    // entries of a runner that stopped.
    const every = Math.max(50, Math.floor(this.config.runner.claimLeaseMs / 3));
    this.extender = this.clock.setInterval(() => void this.extendHeld(), every);
    this.extender.unref();
  }

  /**
   * SIGTERM (a deploy): stop claiming, let the drives under way finish within the grace period,
   * then hand back the claims of those still going (another instance takes them at once instead
   * of after the claim lease) and let go of their queue entries. Runs before the HTTP server
   * closes, so the API keeps answering meanwhile.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.clock.clearTimeout(this.wakeTimer);
    this.wake?.();
    await this.loop;
    // Half the shutdown's grace: the rest is for handing back, the timers and closing.
    const grace = ShutdownDeadline.drivesShare(this.config.runner.shutdownGraceMs);
    const started = this.clock.now();
    let timer: Timer | undefined;
    const finished = await Promise.race([
      Promise.allSettled([...this.inFlight]).then(() => true),
      new Promise<false>((resolve) => (timer = this.clock.setTimeout(() => resolve(false), grace))),
    ]);
    this.clock.clearTimeout(timer);
    this.clock.clearInterval(this.extender);
    if (!finished) {
      const n = await this.engine.handBackClaims(this.config.instanceId);
      this.logger.warn(
        `${this.inFlight.size} drive(s) still under way after ${grace} ms: handed back ${n} claim(s)`,
      );
      // A drive whose claim query was in flight hands its claim back when the query returns:
      // waited for (a quarter of the grace at most; the process deadline bounds the rest), so
      // the pools do not close under that write and leave the claim to lapse by lease.
      let settle: Timer | undefined;
      await Promise.race([
        Promise.allSettled([...this.inFlight]),
        new Promise<void>((resolve) => (settle = this.clock.setTimeout(resolve, grace / 2))),
      ]);
      this.clock.clearTimeout(settle);
      await this.engine.lateClaimsHandedBack();
      // Their queue entries go too: the tasks are due now in the database, and the Dispatcher
      // of another instance queues them again.
      for (const lane of LANES) this.pendingAcks[lane].push(...this.held[lane]);
    } else if (this.clock.now() - started > 50) {
      this.logger.log(`the drives under way finished in ${this.clock.now() - started} ms`);
    }
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
    const now = this.clock.now();
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
    this.clock.clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    if (this.wakes.length === 0 || this.stopping) return;
    this.wakeTimer = this.clock.setTimeout(
      () => {
        this.wakeTimer = undefined;
        const now = this.clock.now();
        let n = 0;
        while (n < this.wakes.length && this.wakes[n] - EARLY_CLAIM_MS <= now) n++;
        this.wakes.splice(0, n);
        this.nudge();
        this.armWake();
      },
      this.wakes[0] - EARLY_CLAIM_MS - this.clock.now(),
    );
    this.wakeTimer.unref();
  }

  private async run(): Promise<void> {
    const { concurrency, claimLeaseMs, retrySharePercent } = this.config.runner;
    const retrySlots = Math.max(1, Math.floor((concurrency * retrySharePercent) / 100));
    // Slots the overflow lane leaves free while work within its tenants' shares keeps arriving,
    // so that work finds a slot at once instead of waiting for a burst's runs to end.
    const reserve = Math.max(1, Math.floor(concurrency / 10));
    while (!this.stopping) {
      const free = concurrency - this.active;
      // An overloaded process finishes what it holds before it takes more (another instance may).
      if (free <= 0 || (this.overload.lagging && this.active > 0)) {
        this.waitingFor = 'slots';
        await this.idle();
        continue;
      }
      let fresh;
      let retries;
      let overflow;
      this.nudged = false;
      try {
        const early = this.clock.now() + EARLY_CLAIM_MS;
        fresh = await this.lanes.main.claim(Math.min(free, 256), claimLeaseMs, early);
        // Retries get what is left, and never more than their share of the slots.
        const retryFree = Math.min(free - fresh.length, retrySlots - this.activeRetries);
        retries =
          retryFree > 0
            ? await this.lanes.retry.claim(Math.min(retryFree, 256), claimLeaseMs, early)
            : [];
        // Tenants' work beyond their fair share gets the slots still free, but the reserve.
        if (fresh.length > 0) this.lastMainAt = this.clock.now();
        const busy = this.active + fresh.length + retries.length;
        const overflowFree =
          this.clock.now() - this.lastMainAt < RESERVE_HOLD_MS
            ? concurrency - reserve - busy
            : concurrency - busy;
        overflow =
          overflowFree > 0
            ? await this.lanes.overflow.claim(Math.min(overflowFree, 256), claimLeaseMs, early)
            : [];
      } catch (err) {
        this.logger.error(`queue claim failed: ${String(err)}`);
        await this.clock.sleep(500);
        continue;
      }
      if (fresh.length === 0 && retries.length === 0 && overflow.length === 0) {
        this.waitingFor = 'work';
        await this.idle();
        continue;
      }
      this.lanes.started(fresh.length + retries.length + overflow.length);
      for (const entry of fresh) this.start(entry.taskId, 'main');
      for (const entry of retries) this.start(entry.taskId, 'retry');
      for (const entry of overflow) this.start(entry.taskId, 'overflow');
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
        this.slotFreed();
      });
    this.inFlight.add(job);
  }

  /**
   * A run ended. A loop waiting for slots claims again once a batch of them is free, or a moment
   * after the first: one claim then fills many. A loop waiting for work looks at once (the slot
   * may be one the overflow lane could not take before).
   */
  private slotFreed(): void {
    if (!this.wake) return;
    if (this.waitingFor === 'work') {
      this.wake();
      return;
    }
    const { concurrency } = this.config.runner;
    const batch = Math.max(1, Math.min(REFILL_BATCH_MAX, Math.floor(concurrency / 8)));
    if (concurrency - this.active >= batch) {
      this.wake();
      return;
    }
    this.refillTimer ??= this.clock.setTimeout(() => {
      this.refillTimer = undefined;
      this.wake?.();
    }, REFILL_DELAY_MS);
  }

  /**
   * Acks go to the queue in batches (one round trip for many tasks). An ack lost to a crash only
   * means the entry comes back after its lease, and the database claim settles it.
   */
  private ack(taskId: string, lane: Lane): void {
    const pending = this.pendingAcks[lane];
    pending.push(taskId);
    if (pending.length >= ACK_BATCH) void this.flushAcks();
    else this.ackTimer ??= this.clock.setTimeout(() => void this.flushAcks(), ACK_DELAY_MS);
  }

  private async extendHeld(): Promise<void> {
    for (const lane of LANES) {
      const ids = [...this.held[lane]];
      if (ids.length === 0) continue;
      const queue = this.lanes.lane(lane);
      await queue
        .extend(ids, this.config.runner.claimLeaseMs)
        .catch((err: unknown) =>
          this.logger.warn(`extending ${ids.length} ${lane} entries failed: ${String(err)}`),
        );
    }
  }

  private async flushAcks(): Promise<void> {
    this.clock.clearTimeout(this.ackTimer);
    this.ackTimer = undefined;
    for (const lane of LANES) {
      const ids = this.pendingAcks[lane].splice(0);
      if (ids.length === 0) continue;
      const queue = this.lanes.lane(lane);
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
        this.clock.clearTimeout(timer);
        this.clock.clearTimeout(this.refillTimer);
        this.refillTimer = undefined;
        this.wake = undefined;
        resolve();
      };
      const timer = this.clock.setTimeout(done, IDLE_WAIT_MS);
      this.wake = done;
    });
  }
}
