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
export function validateCron(cron: string, timeZone: string): void {
  if (!isTimeZone(timeZone))
    throw new ScheduleError(`unknown time zone ${JSON.stringify(timeZone)}`);
  const fields = cron.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6)
    throw new ScheduleError(`cron must have 5 or 6 fields (seconds first), got ${fields}`);
  try {
    const it = CronExpressionParser.parse(cron, { tz: timeZone, currentDate: new Date() });
    if (!it.hasNext()) throw new ScheduleError(`cron ${JSON.stringify(cron)} never fires`);
  } catch (err) {
    if (err instanceof ScheduleError) throw err;
    throw new ScheduleError(`cron ${JSON.stringify(cron)}: ${(err as Error).message}`);
  }
}

/** The first slot strictly after `after` (epoch ms), or null when the schedule has no more. */
export function nextSlot(s: Schedule, after: number): number | null {
  switch (s.kind) {
    case 'once':
      return s.at > after ? s.at : null;
    case 'interval': {
      if (after < s.anchor) return s.anchor;
      const k = Math.floor((after - s.anchor) / s.everyMs) + 1;
      return s.anchor + k * s.everyMs;
    }
    case 'cron': {
      const it = CronExpressionParser.parse(s.cron, {
        tz: s.timeZone,
        currentDate: new Date(after),
      });
      if (!it.hasNext()) return null;
      const next = it.next().getTime();
      if (next <= after) throw new ScheduleError(`cron ${s.cron} went backwards from ${after}`);
      return next;
    }
  }
}

/**
 * The slots in [from, until], in order, at most `limit` of them, starting with `from` itself when
 * `from` is a slot (the stored next fire time always is).
 */
export function slotsBetween(s: Schedule, from: number, until: number, limit: number): number[] {
  const out: number[] = [];
  let slot: number | null = from;
  while (slot !== null && slot <= until && out.length < limit) {
    out.push(slot);
    slot = nextSlot(s, slot);
  }
  return out;
}
