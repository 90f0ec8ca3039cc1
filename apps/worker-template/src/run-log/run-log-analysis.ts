import { readFileSync } from 'node:fs';
import { RunLogLine } from './file-run-log';

/** One run as an interval; `end` is undefined when the log has no end line (a crash cut it). */
export interface RunInterval {
  task_id: string;
  attempt: number;
  worker_id: string;
  lock_keys: string[];
  start: number;
  end: number | undefined;
  /** How the run ended, from its end line (undefined with `end`). */
  outcome?: string;
}

/** Two runs that were under way at the same time on the same task or lock key. */
export interface Overlap {
  on: string;
  a: RunInterval;
  b: RunInterval;
}

/** Reads run-log files (one per worker instance) and pairs start and end lines into intervals. */
export function readRunLogs(paths: readonly string[]): RunInterval[] {
  const open = new Map<string, RunInterval>();
  const done: RunInterval[] = [];
  for (const path of paths) {
    for (const raw of readFileSync(path, 'utf8').split('\n')) {
      if (!raw.trim()) continue;
      const line = JSON.parse(raw) as RunLogLine;
      const key = `${line.worker_id}/${line.pid}/${line.task_id}/${line.attempt}/${line.started_at}`;
      if (line.event === 'start') {
        open.set(key, {
          task_id: line.task_id,
          attempt: line.attempt,
          worker_id: line.worker_id,
          lock_keys: line.lock_keys,
          start: line.started_at,
          end: undefined,
        });
      } else {
        const interval = open.get(key);
        if (interval) {
          interval.end = line.ended_at;
          interval.outcome = line.outcome;
          open.delete(key);
          done.push(interval);
        }
      }
    }
  }
  return [...done, ...open.values()];
}

/**
 * Every pair of runs that overlapped on a task id or on a lock key. A run with no end line is
 * taken to last until `cutOffAt` (when its process was killed), or forever when not given.
 */
export function findOverlaps(
  runs: readonly RunInterval[],
  cutOffAt = Number.POSITIVE_INFINITY,
): Overlap[] {
  const byResource = new Map<string, RunInterval[]>();
  for (const run of runs) {
    for (const resource of [`task:${run.task_id}`, ...run.lock_keys.map((k) => `lock:${k}`)]) {
      const list = byResource.get(resource) ?? [];
      list.push(run);
      byResource.set(resource, list);
    }
  }
  const overlaps: Overlap[] = [];
  for (const [on, list] of byResource) {
    const sorted = [...list].sort((x, y) => x.start - y.start);
    let latest: RunInterval | undefined;
    for (const run of sorted) {
      const latestEnd = latest ? (latest.end ?? cutOffAt) : Number.NEGATIVE_INFINITY;
      if (latest && run.start < latestEnd) overlaps.push({ on, a: latest, b: run });
      if (!latest || (run.end ?? cutOffAt) > latestEnd) latest = run;
    }
  }
  return overlaps;
}
