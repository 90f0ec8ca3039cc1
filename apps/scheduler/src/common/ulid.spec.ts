import { decodeTime } from 'ulid';
import { monotonicUlid } from './ulid';

describe('monotonicUlid', () => {
  it('writes ULIDs the ulid package reads back, with their time', () => {
    const next = monotonicUlid(() => 1_765_000_000_123);
    const id = next();
    expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(decodeTime(id)).toBe(1_765_000_000_123);
  });

  it('sorts in the order made, within a millisecond, across them, and when the clock steps back', () => {
    let t = 1_000;
    const next = monotonicUlid(() => t);
    const ids: string[] = [];
    for (let i = 0; i < 5000; i++) {
      if (i % 1000 === 999) t += 1;
      if (i === 2500) t -= 5; // a clock that stepped back
      ids.push(next());
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it('carries into the next digit when the last one is full', () => {
    const next = monotonicUlid(() => 42);
    const seen: string[] = [];
    for (let i = 0; i < 40; i++) seen.push(next());
    // 40 steps from a random start cross at least one carry out of the last digit.
    expect([...seen].sort()).toEqual(seen);
    expect(new Set(seen.map((s) => s.slice(0, 25))).size).toBeGreaterThan(1);
  });
});
