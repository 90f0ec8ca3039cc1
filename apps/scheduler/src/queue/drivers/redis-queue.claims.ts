import { ClaimedEntry, QueueEntry } from '../queue.driver';
import { MAX_PRIORITY } from '../queue-entry.validation';

/*
 * The Redis queue's keys and its claim across shards, as pure functions: which keys a shard has,
 * which entries of the shards' peeks to take, and what a claim script answered.
 */

/** A shard's keys: one sorted set per priority, the claimed set and the two priority indexes. */
export function shardKeys(prefix: string, shard: number): string[] {
  const tag = `{${prefix}:s${shard}}`;
  const keys: string[] = [];
  for (let p = 0; p <= MAX_PRIORITY; p++) keys.push(`${tag}:p${p}`);
  keys.push(`${tag}:claimed`, `${tag}:pending-priority`, `${tag}:claimed-priority`);
  return keys;
}

interface Candidate {
  shard: number;
  priority: number;
  taskId: string;
  dueAt: number;
}

/**
 * Merges the shards' peeks into the best `want` entries overall and says how many to take from
 * each shard's lanes: `byShard` maps a shard to [priority, count] pairs, highest priority first.
 */
export function planClaim(
  peeks: unknown[],
  want: number,
): { total: number; byShard: Map<number, [number, number][]> } {
  const candidates: Candidate[] = [];
  peeks.forEach((reply, shard) => {
    const flat = reply as (string | number)[];
    for (let i = 0; i < flat.length; i += 3) {
      candidates.push({
        shard,
        priority: Number(flat[i]),
        taskId: String(flat[i + 1]),
        dueAt: Number(flat[i + 2]),
      });
    }
  });
  candidates.sort(claimOrder);
  const chosen = candidates.slice(0, want);
  const counts = new Map<number, Map<number, number>>();
  for (const c of chosen) {
    const lanes = counts.get(c.shard) ?? new Map<number, number>();
    lanes.set(c.priority, (lanes.get(c.priority) ?? 0) + 1);
    counts.set(c.shard, lanes);
  }
  const byShard = new Map<number, [number, number][]>();
  for (const [shard, lanes] of counts) {
    byShard.set(
      shard,
      [...lanes.entries()].sort(([a], [b]) => b - a),
    );
  }
  return { total: chosen.length, byShard };
}

export function claimOrder(a: QueueEntry, b: QueueEntry): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (a.dueAt !== b.dueAt) return a.dueAt - b.dueAt;
  return a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0;
}

export function parseClaims(reply: unknown, leaseUntil: number): ClaimedEntry[] {
  const flat = reply as string[];
  const claims: ClaimedEntry[] = [];
  for (let i = 0; i < flat.length; i += 3) {
    claims.push({
      taskId: flat[i],
      priority: Number(flat[i + 1]),
      dueAt: Number(flat[i + 2]),
      leaseUntil,
    });
  }
  return claims;
}
