/**
 * Which worker versions may take new tasks of a type (`worker_rules` of a task type): a lowest
 * version, versions that are blocked, and a ramp that sends a share of new tasks to one version
 * being released.
 */
export interface WorkerRules {
  /** Workers below it get no new task of the type. */
  minVersion: string | null;
  /** Workers running one of these get no new task of the type. */
  blockedVersions: string[];
  /** `percent` of new tasks go to workers of `version` while workers of other versions serve. */
  ramp: { version: string; percent: number } | null;
}

const DIGITS = /^(\d+)(.*)$/;

/** A dot part of a version: its leading number (if any) and what follows. */
function splitPart(part: string): { n: number | null; rest: string } {
  const m = DIGITS.exec(part);
  return m ? { n: Number(m[1]), rest: m[2] } : { n: null, rest: part };
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function comparePart(a: string, b: string): number {
  const x = splitPart(a);
  const y = splitPart(b);
  if (x.n === null || y.n === null) return byText(a, b);
  if (x.n !== y.n) return x.n - y.n;
  // The same number: a bare one is the release, ahead of what carries a suffix (2-rc1 < 2).
  if (x.rest === y.rest) return 0;
  if (x.rest === '') return 1;
  if (y.rest === '') return -1;
  return byText(x.rest, y.rest);
}

/**
 * Orders versions part by part on their dots: numbers as numbers (1.10 after 1.9), a missing part
 * as 0 (1.2 equals 1.2.0), a part with a suffix before its bare number (1.2.0-rc1 before 1.2.0),
 * and parts that do not start with a digit as text. Negative, zero or positive, as a sort wants.
 */
export function compareVersions(a: string, b: string): number {
  const xs = a.trim().split('.');
  const ys = b.trim().split('.');
  for (let i = 0; i < Math.max(xs.length, ys.length); i++) {
    const c = comparePart(xs[i] ?? '0', ys[i] ?? '0');
    if (c !== 0) return Math.sign(c);
  }
  return 0;
}

/** Why the rules keep a worker of `version` from new tasks of the type; null when they do not. */
export function versionExclusion(version: string, rules: WorkerRules | null): string | null {
  if (!rules) return null;
  if (rules.minVersion !== null && compareVersions(version, rules.minVersion) < 0)
    return `version ${version} is below min_version ${rules.minVersion}`;
  const blocked = rules.blockedVersions.find((v) => compareVersions(version, v) === 0);
  if (blocked !== undefined) return `version ${version} is blocked (blocked_versions)`;
  return null;
}

/** Why `rules` contradict themselves (a ramp to a version they keep out); null when they do not. */
export function rulesProblem(rules: WorkerRules): string | null {
  const ramp = rules.ramp;
  if (!ramp) return null;
  const excluded = versionExclusion(ramp.version, { ...rules, ramp: null });
  return excluded ? `ramp.version: ${excluded}` : null;
}

/**
 * A task's place among 100 buckets, from its id alone: a ramp of p percent sends the tasks of
 * buckets below p to the new version. Spread evenly over ids that differ in a character or two
 * (ULIDs made in the same millisecond), and stable: the same task falls in the same bucket on
 * every instance and every attempt.
 */
export function rampBucket(taskId: string): number {
  // FNV-1a over the UTF-16 code units, then a final mix so that the last characters reach
  // every bit.
  let h = 0x811c9dc5;
  for (let i = 0; i < taskId.length; i++) {
    h ^= taskId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % 100;
}

/**
 * Of the workers that may take a new task of the type, those the ramp gives this task to: the
 * ramp's version for a task in the ramp's buckets, the other versions for the rest. When the side
 * the task falls on has no worker at all, the other side takes it: a ramp only divides the work
 * while both versions serve, and never holds tasks back for a version nobody runs any more (or
 * yet).
 */
export function rampSide<W extends { version: string }>(
  workers: readonly W[],
  rules: WorkerRules | null,
  taskId: string,
): readonly W[] {
  const ramp = rules?.ramp;
  if (!ramp) return workers;
  const fresh = workers.filter((w) => compareVersions(w.version, ramp.version) === 0);
  const others = workers.filter((w) => compareVersions(w.version, ramp.version) !== 0);
  const [mine, theirs] = rampBucket(taskId) < ramp.percent ? [fresh, others] : [others, fresh];
  return mine.length > 0 ? mine : theirs;
}
