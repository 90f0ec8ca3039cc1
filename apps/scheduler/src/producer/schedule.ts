import { CronExpressionParser } from 'cron-parser';

/** When a timer fires: a cron with seconds in a time zone, a fixed interval, or one instant. */
export type Schedule =
  | { kind: 'cron'; cron: string; timeZone: string }
  | { kind: 'interval'; everyMs: number; anchor: number }
  | { kind: 'once'; at: number };

/** A schedule that cannot be used; the message says why (it becomes the 400's message). */
export class ScheduleError extends Error {}

/** True when `tz` is an IANA zone name this runtime knows. */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks a cron expression: five fields (minute first) or six (seconds first), parsed by
 * cron-parser in the given zone. Throws ScheduleError with the parser's reason.
 */
export function validateCron(cron: string, timeZone: string, now: number): void {
  if (!isTimeZone(timeZone))
    throw new ScheduleError(`unknown time zone ${JSON.stringify(timeZone)}`);
  const fields = cron.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6)
    throw new ScheduleError(`cron must have 5 or 6 fields (seconds first), got ${fields}`);
  try {
    const it = CronExpressionParser.parse(cron, { tz: timeZone, currentDate: new Date(now) });
    if (!it.hasNext()) throw new ScheduleError(`cron ${JSON.stringify(cron)} never fires`);
  } catch (err) {
    if (err instanceof ScheduleError) throw err;
    throw new ScheduleError(`cron ${JSON.stringify(cron)}: ${(err as Error).message}`);
  }
}

/** The slots strictly after `after`, in order (a cron expression is parsed once). */
export function* slotsAfter(s: Schedule, after: number): Generator<number> {
  switch (s.kind) {
    case 'once':
      if (s.at > after) yield s.at;
      return;
    case 'interval': {
      const k = after < s.anchor ? 0 : Math.floor((after - s.anchor) / s.everyMs) + 1;
      for (let slot = s.anchor + k * s.everyMs; ; slot += s.everyMs) yield slot;
    }
    case 'cron': {
      const it = CronExpressionParser.parse(s.cron, {
        tz: s.timeZone,
        currentDate: new Date(after),
      });
      let last = after;
      while (it.hasNext()) {
        const next = it.next().getTime();
        if (next <= last) throw new ScheduleError(`cron ${s.cron} went backwards from ${last}`);
        yield (last = next);
      }
    }
  }
}

/** The first slot strictly after `after`, or null when the schedule has no more. */
export function nextSlot(s: Schedule, after: number): number | null {
  const { value, done } = slotsAfter(s, after).next();
  return done ? null : value;
}

/** The latest slot at or before `at`, or null when there is none. */
export function lastSlotAtOrBefore(s: Schedule, at: number): number | null {
  switch (s.kind) {
    case 'once':
      return s.at <= at ? s.at : null;
    case 'interval':
      return at < s.anchor ? null : s.anchor + Math.floor((at - s.anchor) / s.everyMs) * s.everyMs;
    case 'cron': {
      const it = CronExpressionParser.parse(s.cron, {
        tz: s.timeZone,
        currentDate: new Date(at + 1),
      });
      return it.hasPrev() ? it.prev().getTime() : null;
    }
  }
}

/**
 * The slots in [from, until], in order, at most `limit` of them, starting with `from` itself when
 * `from` is a slot (the stored next fire time always is).
 */
export function slotsBetween(s: Schedule, from: number, until: number, limit: number): number[] {
  const out: number[] = [];
  if (from > until || limit <= 0) return out;
  out.push(from);
  for (const slot of slotsAfter(s, from)) {
    if (slot > until || out.length >= limit) break;
    out.push(slot);
  }
  return out;
}

/** How many slots lie in [from, to] (`from` a slot), counting at most `cap` (statistics only). */
export function countSlots(s: Schedule, from: number, to: number, cap: number): number {
  if (to < from) return 0;
  if (s.kind === 'interval') return Math.min(cap, Math.floor((to - from) / s.everyMs) + 1);
  return slotsBetween(s, from, to, cap).length;
}

/** A timer's window: no slot before `startAt`, none after `endAt`. */
export interface Window {
  startAt: number | null;
  endAt: number | null;
}

export const inWindow = (w: Window, slot: number | null): number | null =>
  slot !== null && (w.endAt === null || slot <= w.endAt) ? slot : null;

/**
 * The first slot a timer fires from `now`: a one-shot at its instant (in the past it fires at once,
 * as a misfire by its policy), any other schedule at its first slot at or after `now` and the
 * start. Null when no slot lies in the window.
 */
export function firstFire(s: Schedule, w: Window, now: number): number | null {
  if (s.kind === 'once') return w.startAt === null || s.at >= w.startAt ? inWindow(w, s.at) : null;
  const from = Math.max(now, w.startAt ?? now);
  return inWindow(w, nextSlot(s, from - 1));
}
