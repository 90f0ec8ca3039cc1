import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { Clock, Timer, crashPoint } from '../common';
import { Metrics } from '../metrics';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { ProducerOwnership } from './ownership';
import { countSlots, inWindow, lastSlotAtOrBefore, nextSlot, slotsBetween } from './schedule';
import { TimerFiring } from './timer-firing';
import { TimerModel, isTopologyTemplate } from './timer.model';
import { TimersRepository } from './timers.repository';

/** How long a timer whose fire failed (database down, ...) waits before it is tried again. */
const RETRY_AFTER_FAILURE_MS = 1000;

/**
 * The Producer (docs/architecture.md): turns timed definitions into tasks. It fires only the timers
 * this instance owns (ProducerOwnership), at their slot time, and creates each fire as a normal
 * task with `repetition=timed` under the idempotency key `timer:<id>:<slot>` — the task table's
 * unique index is what makes a slot fire once whatever happens to the owners. The task is written
 * first and the timer advanced after (compare-and-set on version): a crash in between leaves the
 * timer behind, and the next owner's attempt at the same slot finds the task already there.
 */
@Injectable()
export class ProducerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Producer');
  private timers: TimerModel[] = [];
  private loadedAt = 0;
  /** Read every timer again at the next pass (set again if asked while a read is under way). */
  private reload = true;
  /** Timers created here since the last read began: a read that started earlier may miss them. */
  private tracked: TimerModel[] = [];
  /** Timers whose last fire failed, and when they may be tried again. */
  private readonly retryAt = new Map<string, number>();
  private wake: Timer | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(
    private readonly repo: TimersRepository,
    private readonly ownership: ProducerOwnership,
    private readonly firing: TimerFiring,
    private readonly metrics: Metrics,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.stopped = false;
    this.ownership.onChange(() => this.nudge(true));
    await this.ownership.start();
    this.nudge(true);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.wake);
    await this.running;
    await this.ownership.stop();
  }

  /** The enabled timers with a slot to come that this instance fires now (read from the database). */
  async ownedTimers(): Promise<string[]> {
    if (!this.ownership.view().active) return [];
    return (await this.repo.active())
      .filter((t) => this.ownership.owns(t.timerId))
      .map((t) => t.timerId)
      .sort();
  }

  /** A timer created or changed through this instance: known at once, without reading every timer. */
  track(t: TimerModel): void {
    this.tracked.push(t);
    this.put(t);
    this.nudge();
  }

  /** A timer deleted through this instance. */
  untrack(timerId: string): void {
    this.timers = this.timers.filter((t) => t.timerId !== timerId);
    this.tracked = this.tracked.filter((t) => t.timerId !== timerId);
  }

  /** Look again now (`reload`: read every timer first, e.g. when ownership moved). */
  nudge(reload = false): void {
    if (reload) this.reload = true;
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.clock.clearTimeout(this.wake);
    this.running = this.pass()
      .catch((err: unknown) =>
        this.logger.error(
          `producer pass failed: ${err instanceof Error ? err.message : String(err)}`,
        ),
      )
      .finally(() => {
        this.running = undefined;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.nudge();
        } else this.sleep();
      });
  }

  private put(t: TimerModel): void {
    const i = this.timers.findIndex((x) => x.timerId === t.timerId);
    if (i >= 0) this.timers[i] = t;
    else this.timers.push(t);
  }

  /**
   * How long before its slot a timer's fire is written. Only `allow` timers of tasks fire ahead:
   * the other overlap policies judge the previous fire's task at the slot itself, and a topology
   * run starts when it is written.
   */
  private lead(t: TimerModel): number {
    return t.overlapPolicy === 'allow' && !isTopologyTemplate(t.template)
      ? this.config.producer.leadMs
      : 0;
  }

  /** When the timer may fire next here: its slot less the lead, or later after a failure. */
  private dueAt(t: TimerModel): number | null {
    if (t.nextFireAt === null || !t.enabled) return null;
    return Math.max(t.nextFireAt - this.lead(t), this.retryAt.get(t.timerId) ?? 0);
  }

  /** Sleeps until the next owned slot, or the next reload, whichever is first. */
  private sleep(): void {
    const now = this.clock.now();
    let until = this.loadedAt + this.config.producer.refreshMs;
    for (const t of this.timers) {
      const due = this.dueAt(t);
      if (due !== null && due < until && this.ownership.owns(t.timerId)) until = due;
    }
    this.wake = this.clock.setTimeout(() => this.nudge(), Math.max(0, until - now));
    this.wake.unref();
  }

  private async pass(): Promise<void> {
    // A standby fires nothing: it reads the timers when it becomes the leader (onChange).
    if (!this.ownership.view().active) return;
    if (this.reload || this.clock.now() - this.loadedAt >= this.config.producer.refreshMs) {
      this.reload = false;
      const createdMeanwhile = this.tracked;
      this.tracked = [];
      // Only what can fall due before the read after next: the rest waits in the database.
      const { refreshMs, leadMs } = this.config.producer;
      const read = await this.repo.active(this.clock.now() + 2 * refreshMs + leadMs);
      this.timers = read;
      for (const t of [...createdMeanwhile, ...this.tracked])
        if (!read.some((r) => r.timerId === t.timerId)) this.put(t);
      this.loadedAt = this.clock.now();
    }
    const now = this.clock.now();
    const due = this.timers.filter((t) => {
      const at = this.dueAt(t);
      return at !== null && at <= now && this.ownership.owns(t.timerId);
    });
    for (const cached of due) {
      if (this.stopped || !this.ownership.owns(cached.timerId)) break;
      try {
        // Validate before acting: the row, not the cache, says whether and where it fires.
        const t = await this.repo.find(cached.timerId);
        if (!t || !t.enabled || t.nextFireAt === null) {
          this.untrack(cached.timerId);
          continue;
        }
        const next = t.nextFireAt - this.lead(t) <= now ? await this.fireDue(t) : t;
        if (next) this.put(next);
        else this.reload = true; // changed elsewhere meanwhile: read it again
        this.retryAt.delete(t.timerId);
      } catch (err) {
        // Nothing was advanced: the next try fires the same slots (the fire key makes that safe).
        this.retryAt.set(cached.timerId, this.clock.now() + RETRY_AFTER_FAILURE_MS);
        this.metrics.inc('baton_timer_fire_errors_total', { timer: cached.timerId });
        this.logger.error(
          `timer ${cached.timerId}: ${err instanceof Error ? err.message : String(err)}; trying again`,
        );
      }
    }
    this.timers = this.timers.filter((t) => t.nextFireAt !== null && t.enabled);
  }

  /**
   * Which due slots fire, by the misfire policy. A slot reached later than the grace is a misfire:
   * `fire_all` fires each (in passes of at most maxCatchUp), `fire_once` only the latest, `skip`
   * none. `last` is the latest slot dealt with; the timer moves on past it. Slots up to
   * `now + lead` are on time (fired ahead); lateness is judged against `now`.
   */
  private plan(t: TimerModel, now: number): { fire: number[]; missed: number; last: number } {
    const horizon = now + this.lead(t);
    const s = t.schedule;
    const from = t.nextFireAt as number;
    const cap = this.config.producer.maxCatchUp;
    const graceEdge = now - t.misfireGraceMs;
    const lastLate = from <= graceEdge ? lastSlotAtOrBefore(s, graceEdge) : null;
    let fire: number[] = [];
    let missed = 0;
    let onTimeFrom = from;
    if (lastLate !== null) {
      const late = countSlots(s, from, lastLate, Number.MAX_SAFE_INTEGER);
      this.metrics.inc('baton_timer_misfires_total', { timer: t.timerId }, late);
      this.logger.warn(
        `timer ${t.timerId}: ${late} slot(s) missed (oldest ${new Date(from).toISOString()}); ${t.misfirePolicy}`,
      );
      if (t.misfirePolicy === 'fire_all') {
        fire = slotsBetween(s, from, lastLate, cap);
        if (fire.length === cap) return { fire, missed: 0, last: fire[fire.length - 1] };
      } else if (t.misfirePolicy === 'fire_once') {
        fire = [lastLate];
        missed = late - 1;
      } else missed = late;
      const after = nextSlot(s, lastLate);
      if (after === null || after > horizon) return { fire, missed, last: lastLate };
      onTimeFrom = after;
    }
    fire = [...fire, ...slotsBetween(s, onTimeFrom, horizon, cap - fire.length)];
    return { fire, missed, last: fire.length > 0 ? fire[fire.length - 1] : (lastLate ?? from) };
  }

  /** Fires the due slots of one timer by its misfire and overlap policies, then advances it. */
  private async fireDue(t: TimerModel): Promise<TimerModel | undefined> {
    const now = this.clock.now();
    const { fire, missed, last } = this.plan(t, now);
    let lastTaskId = t.lastTaskId;
    let lastFireAt = t.lastFireAt;
    let fired = 0;
    let skipped = 0;
    for (const slot of fire) {
      if (t.endAt !== null && slot > t.endAt) break;
      if (!this.ownership.owns(t.timerId)) return undefined;
      const outcome = await this.firing.slot(t, slot, lastTaskId);
      if (outcome === 'skipped') {
        skipped++;
        continue;
      }
      lastTaskId = outcome.taskId;
      lastFireAt = slot;
      // Counted whether this pass or a crashed owner before it wrote the task: only the pass
      // whose advance (compare-and-set) wins stores its counts.
      fired++;
    }
    crashPoint('after-timer-fire');
    const nextFireAt = inWindow(t, nextSlot(t.schedule, last));
    const advance = (row: TimerModel, next: number | null): TimerModel => ({
      ...row,
      nextFireAt: next,
      lastFireAt,
      // The newest of the two: a fire made meanwhile through the API ("run now") is kept.
      lastTaskId:
        row.lastTaskId !== null && (lastTaskId === null || row.lastTaskId > lastTaskId)
          ? row.lastTaskId
          : lastTaskId,
      fireCount: row.fireCount + fired,
      misfireCount: row.misfireCount + missed,
      skipCount: row.skipCount + skipped,
      updatedAt: now,
    });
    const stored = await this.repo.replace(t, advance(t, nextFireAt));
    if (stored || fired + missed + skipped === 0) return stored;
    // Lost to a change made through the API while this pass fired (a timer disabled, renamed):
    // the fires happened, so they are counted on the row as it now is. Not when another owner
    // advanced it meanwhile (its pass counted the same slots), and the API's own next slot is
    // kept when it set one (a new schedule, a window).
    const fresh = await this.repo.find(t.timerId);
    if (!fresh || fresh.fireCount !== t.fireCount || fresh.lastFireAt !== t.lastFireAt)
      return undefined;
    return this.repo.replace(
      fresh,
      advance(fresh, fresh.nextFireAt === t.nextFireAt ? nextFireAt : fresh.nextFireAt),
    );
  }
}
