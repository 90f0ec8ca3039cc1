/**
 * The scheduler's queue (docs/architecture.md): due tasks waiting for a runner, by priority.
 * The database is the source of truth; the queue is a fast path the Checker can always rebuild
 * from it (after a Redis restart or FLUSHALL nothing is lost, only delayed).
 */

/** A task waiting to be driven. */
export interface QueueEntry {
  taskId: string;
  /** 0–9, 9 first. */
  priority: number;
  /** Epoch ms; the entry is not claimable before. */
  dueAt: number;
}

/** An entry a runner holds. Its lease must be extended while the runner works, or it is requeued. */
export interface ClaimedEntry extends QueueEntry {
  /** Epoch ms when the claim lapses. */
  leaseUntil: number;
}

export interface QueueDriver {
  /** Short name for logs: `memory`, `redis`. */
  readonly name: string;
  /**
   * Adds entries to the pending set. Idempotent per taskId: an entry already pending keeps the
   * earlier due time and takes the given priority. An entry that is claimed is also added to the
   * pending set (the runner's database claim settles who drives it).
   */
  enqueue(entries: readonly QueueEntry[]): Promise<void>;
  /**
   * Claims up to `max` due entries (dueAt <= now): the highest priority first, the earliest due
   * within a priority, ties by taskId. Claimed entries leave the pending set and hold a lease of
   * `leaseMs`. Atomic: two concurrent claims never return the same entry.
   */
  claim(max: number, leaseMs: number, now?: number): Promise<ClaimedEntry[]>;
  /** Extends the leases of claimed entries; returns the ids still claimed (the rest were lost). */
  extend(taskIds: readonly string[], leaseMs: number, now?: number): Promise<string[]>;
  /** Drops claimed entries: their runner is done with them. Unknown ids are ignored. */
  ack(taskIds: readonly string[]): Promise<void>;
  /** Moves claimed entries whose lease lapsed back to pending, due at once; returns their ids. */
  requeueExpired(now?: number): Promise<string[]>;
  /** Removes entries wherever they are (pending or claimed), e.g. a cancelled task. */
  remove(taskIds: readonly string[]): Promise<void>;
  /** For each id: is it pending or claimed? (The Checker's reconciliation.) */
  contains(taskIds: readonly string[]): Promise<boolean[]>;
  /** Counts, for metrics and tests. */
  size(): Promise<{ pending: number; claimed: number }>;
  /** Drops everything (tests). */
  clear(): Promise<void>;
  /**
   * Gives up the connection and opens a new one (a check on it went unanswered: a request sent
   * into a silent partition is lost, and the old connection would stay dead after the heal).
   * Nothing to do for a driver without one.
   */
  reconnect?(): void;
  close(): Promise<void>;
}

export const QUEUE_DRIVER = Symbol('QUEUE_DRIVER');
