import type { ManualClock } from '@baton/time';
import type { Api } from './baton';
import { eventually, holds, pollUntil } from './processes';

/**
 * How a test that runs on either tier waits: for real time against processes, by moving a
 * ManualClock in-process. A case written against `Waits` states what it waits for; the tier says
 * how time passes meanwhile. Every bound is in the time the scheduler reads.
 */
export interface Waits {
  /** Now, on the clock the scheduler reads. */
  now(): number;
  /** `probe`'s first answer other than undefined, within `timeoutMs`. */
  eventually<T>(probe: () => Promise<T | undefined>, timeoutMs?: number, what?: string): Promise<T>;
  /** `check` holds all through `ms` (nothing more happens). */
  holds(check: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void>;
  /** The task once it is in `status` (FINISH unless named). */
  until(
    api: Api,
    id: string,
    status?: string,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
}

function untilVia(w: Pick<Waits, 'eventually'>): Waits['until'] {
  return async (api, id, status = 'FINISH', timeoutMs = 20_000) =>
    w.eventually(
      async () => {
        const t = await api.task(id);
        return t.task_status === status ? t : undefined;
      },
      timeoutMs,
      `task ${id} reaching ${status}`,
    );
}

/** Real time: processes run on their own, the test polls. */
export const realTime: Waits = {
  now: () => Date.now(),
  eventually: (probe, timeoutMs, what) => eventually(probe, timeoutMs, what),
  holds,
  until: untilVia({ eventually: (probe, timeoutMs, what) => eventually(probe, timeoutMs, what) }),
};

/**
 * Time on `clock`, moved `stepMs` at a time between two probes: what a step starts (a loop's
 * pass, its writes, a worker's answer) settles before the next, as it would in the real time the
 * clock stands for.
 */
export function manualTime(clock: ManualClock, stepMs = 50): Waits {
  const w: Pick<Waits, 'eventually'> = {
    eventually: (probe, timeoutMs = 10_000, what = 'condition') =>
      pollUntil(probe, timeoutMs, what, {
        now: () => clock.now(),
        pass: () => clock.advance(stepMs),
        unit: ' of clock time',
      }),
  };
  return {
    now: () => clock.now(),
    eventually: w.eventually,
    async holds(check, ms, what) {
      const end = clock.now() + ms;
      for (;;) {
        if (!(await check()))
          throw new Error(`${what} stopped holding after ${ms - (end - clock.now())} ms`);
        if (clock.now() >= end) return;
        await clock.advance(Math.min(stepMs, end - clock.now()));
      }
    },
    until: untilVia(w),
  };
}
