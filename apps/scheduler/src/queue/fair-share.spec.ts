import { MemoryFairShare } from './fair-share';

describe('MemoryFairShare', () => {
  it("admits a tenant's entries at its share of the last second's starts, a tenth of a second at a time", async () => {
    let now = 5_000_000;
    const fair = new MemoryFairShare(10, () => now);
    // Nothing started the second before: the minimum share, 10/s, holds; the bucket holds one.
    expect(await fair.admit('a', 100)).toBe(1);
    expect(await fair.admit('a', 5)).toBe(0);
    expect(await fair.admit('b', 3)).toBe(1);
    now += 500;
    // Half a second at 10/s is five tokens, but the bucket holds one.
    expect(await fair.admit('a', 100)).toBe(1);
    fair.started(600);
    // The next second: 600 starts shared by the two tenants that had work, 300/s each.
    now = 5_001_000;
    expect(await fair.admit('a', 100)).toBe(30);
    now += 50;
    expect(await fair.admit('a', 100)).toBe(15);
    expect(await fair.admit('b', 2)).toBe(2);
    // Counts of older seconds are dropped: a quiet second brings the minimum back.
    now += 3000;
    expect(await fair.admit('a', 100)).toBe(1);
  });
});
