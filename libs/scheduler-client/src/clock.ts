/*
 * The client's time: every wait, deadline and "down until" runs on a `SchedulerClientClock`, so a
 * test hands in a ManualClock from @baton/time (which has this shape) and moves time instead of
 * waiting. The package is built and published on its own and depends on nothing but Node.js, so
 * its default, the process's own clock, is written here: eslint.config.mjs names this file as one
 * of the few that may touch the process's timers, for that reason.
 */

/** What the client needs of a clock; `Clock` from @baton/time fits it. */
export interface SchedulerClientClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(timer: never): void;
}

/** The process's clock. */
export const processClock: SchedulerClientClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer: NodeJS.Timeout) => clearTimeout(timer),
};

type AnyClearTimeout = (timer: unknown) => void;

/**
 * Waits `ms` on `clock`, or rejects with the signal's reason when `signal` aborts first. The timer
 * keeps the process up: a script awaiting a task may have nothing else doing so.
 */
export function sleep(
  clock: SchedulerClientClock,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason as Error);
  const clear = clock.clearTimeout.bind(clock) as AnyClearTimeout;
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clear(timer);
      reject(signal?.reason as Error);
    };
    const timer = clock.setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A signal that aborts after `ms` (a `TimeoutError`) or when `parent` aborts; `cancel()` drops its
 * timer once the call is over.
 */
export function deadline(
  clock: SchedulerClientClock,
  ms: number,
  parent?: AbortSignal,
): { signal: AbortSignal; cancel(): void } {
  const controller = new AbortController();
  const clear = clock.clearTimeout.bind(clock) as AnyClearTimeout;
  const timeout = Object.assign(new Error(`no answer within ${ms} ms`), { name: 'TimeoutError' });
  const timer = clock.setTimeout(() => controller.abort(timeout), Math.max(0, ms));
  const onParent = (): void => controller.abort(parent?.reason);
  if (parent?.aborted) onParent();
  else parent?.addEventListener('abort', onParent, { once: true });
  return {
    signal: controller.signal,
    cancel: () => {
      clear(timer);
      parent?.removeEventListener('abort', onParent);
    },
  };
}
