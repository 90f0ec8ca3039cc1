import { Clock, Timer } from './clock';

interface Pending {
  id: number;
  due: number;
  fn: () => void;
  /** Set for a repeating timer: its period. */
  every?: number;
  handle: ManualTimer;
}

class ManualTimer implements Timer {
  constructor(readonly id: number) {}
  unref(): Timer {
    return this;
  }
  ref(): Timer {
    return this;
  }
}

/** How many turns of the event loop a settle lets pass (promise chains, in-process I/O). */
const SETTLE_TURNS = 20;

/**
 * A clock that moves only when told. Timers fire in due order (ties in the order they were set)
 * as `advance` passes their time; between two firings the event loop turns a few times, so the
 * promise chains and in-process I/O a timer started finish before the next one fires. In the
 * spirit of BullMQ's fake timers and Temporal's time-skipping test environment.
 */
export class ManualClock extends Clock {
  private current: number;
  private readonly origin: number;
  private readonly timers = new Map<number, Pending>();
  private sequence = 0;

  /** `start`: the wall-clock time it reads at first (epoch ms). */
  constructor(start = Date.UTC(2026, 0, 1)) {
    super();
    this.current = start;
    this.origin = start;
  }

  override now(): number {
    return this.current;
  }

  override monotonic(): number {
    return this.current - this.origin;
  }

  override setTimeout(fn: () => void, ms: number): Timer {
    return this.add(fn, ms);
  }

  override setInterval(fn: () => void, ms: number): Timer {
    return this.add(fn, ms, Math.max(1, ms));
  }

  override clearTimeout(timer: Timer | undefined): void {
    // Only a timer of this clock: another clock's ids may be the same numbers.
    if (timer instanceof ManualTimer && this.timers.get(timer.id)?.handle === timer)
      this.timers.delete(timer.id);
  }

  /** Timers waiting to fire. */
  pending(): number {
    return this.timers.size;
  }

  /** When the next timer fires, or undefined when none waits. */
  nextDue(): number | undefined {
    return this.first()?.due;
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way (a timer set by a
   * firing one fires too when its time is within the span), then settles.
   */
  async advance(ms: number): Promise<void> {
    const target = this.current + Math.max(0, ms);
    await this.settle();
    for (;;) {
      const next = this.first();
      if (!next || next.due > target) break;
      this.current = Math.max(this.current, next.due);
      // As Node does: the next round of an interval is a period after this one ran (after a
      // stall it runs once, late, not once per period missed).
      if (next.every !== undefined) next.due = this.current + next.every;
      else this.timers.delete(next.id);
      next.fn();
      await this.settle();
    }
    // Never back: another advance may have moved time past `target` meanwhile.
    this.current = Math.max(this.current, target);
    await this.settle();
  }

  /**
   * Moves time forward by `ms` without firing a timer, as a process that was stopped (SIGSTOP, a
   * frozen VM) sees it: the timers that fell due meanwhile fire late, at the next `advance`.
   */
  stall(ms: number): void {
    this.current += Math.max(0, ms);
  }

  /** Moves time to `at` (epoch ms), as `advance`. */
  advanceTo(at: number): Promise<void> {
    return this.advance(at - this.current);
  }

  /**
   * Moves time in steps of `stepMs` until `done()` holds (checked before each step), at most
   * `maxMs` of clock time; throws when it never does, naming `what`.
   */
  async until(
    done: () => boolean | Promise<boolean>,
    what: string,
    { stepMs = 50, maxMs = 600_000 } = {},
  ): Promise<void> {
    const limit = this.current + maxMs;
    for (;;) {
      if (await done()) return;
      if (this.current >= limit) throw new Error(`${what}: not within ${maxMs} ms of clock time`);
      await this.advance(stepMs);
    }
  }

  /** Lets promise chains and in-process I/O that are ready run, without moving time. */
  async settle(turns = SETTLE_TURNS): Promise<void> {
    for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
  }

  private add(fn: () => void, ms: number, every?: number): Timer {
    const id = ++this.sequence;
    const handle = new ManualTimer(id);
    const delay = Number.isFinite(ms) ? Math.max(0, ms) : 0;
    this.timers.set(id, { id, due: this.current + delay, fn, every, handle });
    return handle;
  }

  private first(): Pending | undefined {
    let best: Pending | undefined;
    for (const t of this.timers.values()) {
      if (!best || t.due < best.due || (t.due === best.due && t.id < best.id)) best = t;
    }
    return best;
  }
}
