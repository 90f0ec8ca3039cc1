/** Reading and checking one environment variable of the scheduler's config. */

/** A configuration problem: the process must not start. */
export class SchedulerConfigError extends Error {}

export type Env = NodeJS.ProcessEnv;

export function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new SchedulerConfigError(
      `${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}

export function oneOf<T extends string>(
  env: Env,
  name: string,
  allowed: readonly T[],
  fallback: T,
): T {
  const raw = env[name] ?? fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new SchedulerConfigError(
      `${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`,
    );
  }
  return raw as T;
}

export function required(env: Env, name: string, why: string): string {
  const v = env[name];
  if (!v) throw new SchedulerConfigError(`${name} is required ${why}`);
  return v;
}

/** A version like 1.1.0 (major.minor.patch). */
export function semver(env: Env, name: string, fallback: string): string {
  const value = env[name] ?? fallback;
  if (!/^\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(value))
    throw new SchedulerConfigError(
      `${name} must be a version like 1.1.0, got ${JSON.stringify(value)}`,
    );
  return value;
}
