import {
  ScheduleError,
  countSlots,
  firstFire,
  isTimeZone,
  lastSlotAtOrBefore,
  nextSlot,
  slotsBetween,
  validateCron,
} from './schedule';

const at = (iso: string): number => Date.parse(iso);
const NOW = at('2026-01-01T00:00:00Z');

describe('schedules', () => {
  it('cron with seconds: every slot of */1 within a window, in order', () => {
    const s = { kind: 'cron' as const, cron: '*/1 * * * * *', timeZone: 'UTC' };
    const from = at('2026-11-22T10:00:00.000Z');
    expect(slotsBetween(s, from, from + 3000, 100)).toEqual([
      from,
      from + 1000,
      from + 2000,
      from + 3000,
    ]);
    expect(nextSlot(s, from + 500)).toBe(from + 1000);
  });

  it('cron in a time zone: 02:30 Berlin on a normal day is 01:30 UTC in winter, 00:30 UTC in summer', () => {
    const s = { kind: 'cron' as const, cron: '0 30 2 * * *', timeZone: 'Europe/Berlin' };
    expect(new Date(nextSlot(s, at('2026-01-10T00:00:00Z')) as number).toISOString()).toBe(
      '2026-01-10T01:30:00.000Z',
    );
    expect(new Date(nextSlot(s, at('2026-07-10T00:00:00Z')) as number).toISOString()).toBe(
      '2026-07-10T00:30:00.000Z',
    );
  });

  it('five-field cron fires at second 0 of the minute', () => {
    const s = { kind: 'cron' as const, cron: '*/15 * * * *', timeZone: 'UTC' };
    expect(new Date(nextSlot(s, at('2026-11-22T10:07:31Z')) as number).toISOString()).toBe(
      '2026-11-22T10:15:00.000Z',
    );
  });

  it('interval: slots on the anchor grid, never drifting', () => {
    const s = { kind: 'interval' as const, everyMs: 250, anchor: 1000 };
    expect(nextSlot(s, 0)).toBe(1000);
    expect(nextSlot(s, 1000)).toBe(1250);
    expect(nextSlot(s, 1100)).toBe(1250);
    expect(slotsBetween(s, 1250, 2000, 10)).toEqual([1250, 1500, 1750, 2000]);
    expect(slotsBetween(s, 1250, 100_000, 3)).toEqual([1250, 1500, 1750]);
  });

  it('once: one slot, then none', () => {
    const s = { kind: 'once' as const, at: 5000 };
    expect(nextSlot(s, 4999)).toBe(5000);
    expect(nextSlot(s, 5000)).toBeNull();
    expect(slotsBetween(s, 5000, 9000, 10)).toEqual([5000]);
  });

  it('refuses bad cron expressions and unknown zones with a reason', () => {
    expect(() => validateCron('not a cron', 'UTC', NOW)).toThrow(ScheduleError);
    expect(() => validateCron('* * *', 'UTC', NOW)).toThrow(/5 or 6 fields/);
    expect(() => validateCron('61 * * * * *', 'UTC', NOW)).toThrow(ScheduleError);
    expect(() => validateCron('* * * * * *', 'Mars/Olympus', NOW)).toThrow(/unknown time zone/);
    expect(() => validateCron('*/5 * * * * *', 'Asia/Tokyo', NOW)).not.toThrow();
    expect(isTimeZone('America/New_York')).toBe(true);
  });
});

describe('schedule arithmetic for misfires', () => {
  const cron = { kind: 'cron' as const, cron: '*/5 * * * * *', timeZone: 'UTC' };
  const t0 = Date.parse('2026-11-22T10:00:00.000Z');

  it('the latest slot at or before an instant, without listing the slots before it', () => {
    expect(lastSlotAtOrBefore(cron, t0 + 5000)).toBe(t0 + 5000);
    expect(lastSlotAtOrBefore(cron, t0 + 9999)).toBe(t0 + 5000);
    expect(lastSlotAtOrBefore(cron, t0 + 365 * 24 * 3600 * 1000 + 2000)).toBe(
      t0 + 365 * 24 * 3600 * 1000,
    );
    expect(lastSlotAtOrBefore({ kind: 'interval', everyMs: 300, anchor: 1000 }, 1999)).toBe(1900);
    expect(lastSlotAtOrBefore({ kind: 'interval', everyMs: 300, anchor: 1000 }, 999)).toBeNull();
    expect(lastSlotAtOrBefore({ kind: 'once', at: 50 }, 49)).toBeNull();
  });

  it('counts slots (bounded), and the first fire respects the window', () => {
    expect(countSlots(cron, t0, t0 + 60_000, 1000)).toBe(13);
    expect(countSlots(cron, t0, t0 + 60_000, 5)).toBe(5);
    expect(countSlots({ kind: 'interval', everyMs: 1000, anchor: 0 }, 0, 3_600_000, 1e9)).toBe(
      3601,
    );
    const once = { kind: 'once' as const, at: 5000 };
    expect(firstFire(once, { startAt: null, endAt: null }, 9000)).toBe(5000);
    expect(firstFire(once, { startAt: null, endAt: 4000 }, 0)).toBeNull();
    expect(firstFire(once, { startAt: 6000, endAt: null }, 0)).toBeNull();
    expect(firstFire(cron, { startAt: t0 + 7000, endAt: null }, t0)).toBe(t0 + 10_000);
    expect(firstFire(cron, { startAt: null, endAt: t0 + 3000 }, t0 + 1)).toBeNull();
  });
});
