import { monotonicFactory } from 'ulid';
import {
  WorkerRules,
  compareVersions,
  rampBucket,
  rampSide,
  rulesProblem,
  versionExclusion,
} from './worker-rules';

/** ULIDs as the scheduler makes them, from a seeded generator: the same ids on every run. */
function ulids(n: number, perMs: number): string[] {
  let seed = 0x2545f491;
  const next = monotonicFactory(() => {
    // mulberry32
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  });
  const start = Date.UTC(2026, 0, 1);
  return Array.from({ length: n }, (_, i) => next(start + Math.floor(i / perMs)));
}

const rules = (over: Partial<WorkerRules>): WorkerRules => ({
  minVersion: null,
  blockedVersions: [],
  ramp: null,
  ...over,
});

describe('compareVersions', () => {
  it.each([
    ['1.9.0', '1.10.0', -1],
    ['1.10', '1.9.9', 1],
    ['2.0.0', '2.0.0', 0],
    ['1.2', '1.2.0', 0],
    ['1.2.0.1', '1.2.0', 1],
    ['1.2.0-rc1', '1.2.0', -1],
    ['1.2.0-rc1', '1.2.0-rc2', -1],
    ['1.2-rc1', '1.1.9', 1],
    ['10.0.0', '9.99.99', 1],
    ['0.1.0', '0.0.9', 1],
    [' 1.0 ', '1.0.0', 0],
    // Parts that are not numbers compare as text.
    ['main', 'main', 0],
    ['alpha', 'beta', -1],
    ['1.x', '1.y', -1],
    ['1.2', '1.x', -1],
  ])('%s against %s is %d', (a, b, expected) => {
    expect(compareVersions(a, b)).toBe(expected);
    expect(compareVersions(b, a)).toBe(-expected || 0);
  });

  it('sorts a mixed list as releases go', () => {
    const sorted = ['1.10.0', '1.2.0', '1.2.0-rc1', '0.9', '1.2.0-beta', '2'].sort(compareVersions);
    expect(sorted).toEqual(['0.9', '1.2.0-beta', '1.2.0-rc1', '1.2.0', '1.10.0', '2']);
  });
});

describe('versionExclusion', () => {
  it('lets every version through without rules', () => {
    expect(versionExclusion('0.0.1', null)).toBeNull();
    expect(versionExclusion('0.0.1', rules({}))).toBeNull();
  });

  it('keeps out what is below min_version, with the reason', () => {
    const r = rules({ minVersion: '1.4.0' });
    expect(versionExclusion('1.3.9', r)).toBe('version 1.3.9 is below min_version 1.4.0');
    expect(versionExclusion('1.4', r)).toBeNull();
    expect(versionExclusion('1.10.0', r)).toBeNull();
  });

  it('keeps out blocked versions, however they are written', () => {
    const r = rules({ blockedVersions: ['1.5.0', '2.0'] });
    expect(versionExclusion('1.5', r)).toBe('version 1.5 is blocked (blocked_versions)');
    expect(versionExclusion('2.0.0', r)).toBe('version 2.0.0 is blocked (blocked_versions)');
    expect(versionExclusion('1.5.1', r)).toBeNull();
  });
});

describe('rulesProblem', () => {
  it('refuses a ramp to a version the rules keep out', () => {
    expect(rulesProblem(rules({ minVersion: '2.0', ramp: { version: '1.9', percent: 10 } }))).toBe(
      'ramp.version: version 1.9 is below min_version 2.0',
    );
    expect(
      rulesProblem(rules({ blockedVersions: ['2.1'], ramp: { version: '2.1.0', percent: 10 } })),
    ).toBe('ramp.version: version 2.1.0 is blocked (blocked_versions)');
    expect(rulesProblem(rules({ minVersion: '2.0', ramp: { version: '2.1', percent: 10 } }))).toBe(
      null,
    );
  });
});

describe('rampBucket', () => {
  it('gives a task the same bucket every time', () => {
    expect(rampBucket('01JD4Z8XKQ9W3M7V2B5N6C1T0A')).toBe(rampBucket('01JD4Z8XKQ9W3M7V2B5N6C1T0A'));
  });

  it('spreads ids made in one burst evenly: each fifth of the buckets holds 18-22% of them', () => {
    const ids = ulids(10_000, 2000);
    const fifths = [0, 0, 0, 0, 0];
    for (const id of ids) fifths[Math.floor(rampBucket(id) / 20)]++;
    for (const n of fifths) {
      expect(n).toBeGreaterThanOrEqual(1800);
      expect(n).toBeLessThanOrEqual(2200);
    }
  });

  it('is not bursty: every run of 100 ids has 8 to 35 below 20', () => {
    const ids = ulids(5000, 50);
    for (let i = 0; i < ids.length; i += 100) {
      const low = ids.slice(i, i + 100).filter((id) => rampBucket(id) < 20).length;
      expect(low).toBeGreaterThanOrEqual(8);
      expect(low).toBeLessThanOrEqual(35);
    }
  });
});

describe('rampSide', () => {
  const old = { id: 'old', version: '1.0.0' };
  const fresh = { id: 'new', version: '1.1.0' };
  const ramp = (percent: number) => rules({ ramp: { version: '1.1', percent } });
  const idIn = (inRamp: boolean): string => {
    for (let i = 0; ; i++) if (rampBucket(`t${i}`) < 50 === inRamp) return `t${i}`;
  };

  it('without a ramp, leaves every worker', () => {
    expect(rampSide([old, fresh], null, 'x')).toEqual([old, fresh]);
  });

  it("sends a task of the ramp's buckets to the new version, the others to the rest", () => {
    expect(rampSide([old, fresh], ramp(50), idIn(true))).toEqual([fresh]);
    expect(rampSide([old, fresh], ramp(50), idIn(false))).toEqual([old]);
  });

  it('at 0% sends nothing to the new version, at 100% everything', () => {
    const ids = Array.from({ length: 200 }, (_, i) => `task-${i}`);
    expect(ids.every((id) => rampSide([old, fresh], ramp(0), id)[0] === old)).toBe(true);
    expect(ids.every((id) => rampSide([old, fresh], ramp(100), id)[0] === fresh)).toBe(true);
  });

  it('lets the other side take a task when its own side has no worker', () => {
    expect(rampSide([old], ramp(50), idIn(true))).toEqual([old]);
    expect(rampSide([fresh], ramp(50), idIn(false))).toEqual([fresh]);
    expect(rampSide([], ramp(50), idIn(false))).toEqual([]);
  });
});
