/**
 * The one time source. Every clock read, sleep, timer and deadline in Baton goes through a
 * `Clock`, so a test can replace it with a `ManualClock` and move time instead of waiting for it.
 * This file and `manual-clock.ts` are the only places that touch the process's own timers
 * (eslint.config.mjs refuses them elsewhere).
 */

/** A pending timer: cancel it through its clock; `unref` lets the process exit while it waits. */
export interface Timer {
  unref(): Timer;
  ref(): Timer;
}

/** Why a deadline signal aborted: the time ran out (its `name` is `TimeoutError`). */
export class DeadlineError extends Error {
  override readonly name = 'TimeoutError';
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/** The real clock: the process's wall clock, monotonic clock and timers. */
export class Clock {
  /** Milliseconds since the epoch (wall clock: may jump when the host's time is set). */
  now(): number {
    return Date.now();
  }

  /** Milliseconds on a clock that never goes back: measure durations with this. */
  monotonic(): number {
    return performance.now();
  }

  /** The current wall-clock time as a Date. */
  date(): Date {
    return new Date(this.now());
  }

  /** Runs `fn` once after `ms`. */
  setTimeout(fn: () => void, ms: number): Timer {
    return setTimeout(fn, ms);
  }

  /** Runs `fn` every `ms` until cleared. */
  setInterval(fn: () => void, ms: number): Timer {
    return setInterval(fn, ms);
  }

  /** Cancels a timer of this clock (one-shot or repeating); undefined is a no-op. */
  clearTimeout(timer: Timer | undefined): void {
    if (timer) clearTimeout(timer as NodeJS.Timeout);
  }

  /** Same as `clearTimeout`, for readers who set an interval. */
  clearInterval(timer: Timer | undefined): void {
    this.clearTimeout(timer);
  }

  /**
   * Resolves after `ms`, or rejects with the signal's reason when `signal` aborts first. The wait
   * keeps the process alive, as a timer does (a shutdown hook may be waiting on it); `unref: true`
   * lets the process exit meanwhile.
   */
  sleep(ms: number, signal?: AbortSignal, opts: { unref?: boolean } = {}): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.clearTimeout(timer);
        reject(signal?.reason as Error);
      };
      const timer = this.setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      if (opts.unref) timer.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * A signal that aborts after `ms` with a `DeadlineError`, and also when `parent` aborts.
   * `cancel()` drops the timer once the guarded work is done (so nothing waits on it).
   *
   * Measured in time the process ran: when its timer fires late (the process was stopped,
   * frozen or starved past `STALL_SLACK_MS`), an answer may have arrived meanwhile and wait
   * unread in a socket. The deadline then gives the process `STALL_GRACE_MS` of its own time to
   * read it before it aborts (a few times at most, while the stalls go on).
   */
  deadline(ms: number, parent?: AbortSignal): Deadline {
    const controller = new AbortController();
    let timer: Timer | undefined;
    let graces = 0;
    const arm = (wait: number): void => {
      const due = this.monotonic() + wait;
      timer = this.setTimeout(() => {
        if (this.monotonic() - due > STALL_SLACK_MS && graces < STALL_GRACES) {
          graces++;
          arm(Math.min(STALL_GRACE_MS, Math.max(1, ms)));
          return;
        }
        controller.abort(new DeadlineError(ms));
      }, wait).unref();
    };
    arm(Math.max(0, ms));
    const onParent = (): void => controller.abort(parent?.reason);
    if (parent?.aborted) onParent();
    else parent?.addEventListener('abort', onParent, { once: true });
    return {
      signal: controller.signal,
      cancel: () => {
        this.clearTimeout(timer);
        parent?.removeEventListener('abort', onParent);
      },
    };
  }
}

/** A timer this late (ms) means the process did not run meanwhile: it stalled. */
export const STALL_SLACK_MS = 500;
/** Running time a deadline gives the process after a stall, to read what arrived meanwhile. */
export const STALL_GRACE_MS = 1000;
/** Graces at most, one per stall that delays the deadline's timer. */
const STALL_GRACES = 5;

/** A deadline: its signal, and how to drop its timer early. */
export interface Deadline {
  readonly signal: AbortSignal;
  cancel(): void;
}

/** The process's real clock, for code that is not handed one (a library used on its own). */
export const systemClock = new Clock();
