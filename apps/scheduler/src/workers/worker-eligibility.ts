import { WorkerRules, versionExclusion } from '../task-types';
import { ManualBlacklist, WorkerModel } from './worker.model';

export type WorkerHealth = 'healthy' | 'stale' | 'blacklisted';

const iso = (ms: number): string => new Date(ms).toISOString();

/** The blacklist a person set, while it holds; null when there is none or it has ended. */
export function activeManualBlacklist(w: WorkerModel, now: number): ManualBlacklist | null {
  const b = w.manualBlacklist;
  return b && (b.until === null || b.until > now) ? b : null;
}

/**
 * Healthy, stale (no heartbeat for `staleAfterMs`), or blacklisted: after repeated call failures
 * for a cool-down, or by a person.
 */
export function healthOf(w: WorkerModel, now: number, staleAfterMs: number): WorkerHealth {
  if (w.blacklistedUntil !== null && w.blacklistedUntil > now) return 'blacklisted';
  if (activeManualBlacklist(w, now)) return 'blacklisted';
  if (now - w.lastHeartbeatAt > staleAfterMs) return 'stale';
  return 'healthy';
}

/** Why the worker takes no new task of any type at `now`; null when it may take them. */
export function fleetExclusion(w: WorkerModel, health: WorkerHealth, now: number): string | null {
  const manual = activeManualBlacklist(w, now);
  if (manual)
    return `blacklisted by hand${manual.until === null ? '' : ` until ${iso(manual.until)}`}: ${manual.reason}`;
  if (w.blacklistedUntil !== null && w.blacklistedUntil > now)
    return `blacklisted after repeated call failures until ${iso(w.blacklistedUntil)}`;
  if (health === 'stale') return `no heartbeat since ${iso(w.lastHeartbeatAt)}`;
  if (w.drainingSince !== null) return `draining since ${iso(w.drainingSince)}`;
  return null;
}

/**
 * For each type the worker serves, why it takes no new task of that type (its state first, then
 * the type's version rules), or null when it may.
 */
export function exclusionsOf(
  w: WorkerModel,
  health: WorkerHealth,
  now: number,
  rulesOf: (taskType: string) => WorkerRules | null,
): Record<string, string | null> {
  const all = fleetExclusion(w, health, now);
  return Object.fromEntries(
    w.taskTypes.map((t) => [t, all ?? versionExclusion(w.version, rulesOf(t))]),
  );
}
