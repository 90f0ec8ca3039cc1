import { randomHex } from './random-pool';

describe('randomHex', () => {
  it('hands out hex of the asked length, never the same bytes twice across refills', () => {
    const seen = new Set<string>();
    // 2,000 x 16 bytes crosses several 4 KiB refills.
    for (let i = 0; i < 2000; i++) {
      const hex = randomHex(16);
      expect(hex).toMatch(/^[0-9a-f]{32}$/);
      seen.add(hex);
    }
    expect(seen.size).toBe(2000);
  });

  it('serves lengths larger than the pool', () => {
    expect(randomHex(5000)).toMatch(/^[0-9a-f]{10000}$/);
  });

  it('spreads over every byte value (not zeros from a drained pool)', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 1000; i++) {
      const hex = randomHex(12);
      for (let j = 0; j < hex.length; j += 2) {
        const b = hex.slice(j, j + 2);
        counts.set(b, (counts.get(b) ?? 0) + 1);
      }
    }
    // 12,000 bytes over 256 values: every value shows up, none dominates.
    expect(counts.size).toBe(256);
    expect(Math.max(...counts.values())).toBeLessThan(120);
  });
});
