import { Clock, systemClock } from '@baton/time';
import { ClaimedEntry, QueueDriver, QueueEntry } from '../queue.driver';
import { assertIntegerAtLeast, assertValidEntries, MAX_PRIORITY } from '../queue-entry.validation';
import { QueueErrorCode, QueueException } from '../queue.exception';
import { BinaryHeap } from './binary-heap';

/** A pending entry as the heaps hold it; replaced, never mutated, so identity marks the live one. */
interface PendingNode {
  readonly taskId: string;
  readonly priority: number;
  readonly dueAt: number;
}

/** A claim as the lease heap holds it; an extend replaces it with a new node. */
interface ClaimNode extends PendingNode {
  readonly leaseUntil: number;
}

/**
 * Stale nodes tolerated in one heap before it is compacted. Below this the skip-on-pop cost is
 * negligible; above it (and above half the heap) a rebuild keeps memory and pops bounded.
 */
const COMPACT_AFTER = 1024;

const dueOrder = (a: PendingNode, b: PendingNode): boolean =>
  a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.taskId < b.taskId);
const leaseOrder = (a: ClaimNode, b: ClaimNode): boolean => a.leaseUntil < b.leaseUntil;

/**
 * The embedded default: the queue in this process's memory. It keeps nothing on disk; at start
 * the Checker rebuilds it from the database, which is the source of truth.
 *
 * One binary heap per priority, ordered by (dueAt, taskId), and one heap of claims by
 * leaseUntil, so every operation is O(log n). Nodes are immutable; a map per set names the live
 * node of each task, and a node that is no longer the live one (moved, claimed again, acked,
 * removed) is left in its heap and dropped when it reaches the top (lazy deletion).
 */
export class MemoryQueueDriver implements QueueDriver {
  readonly name = 'memory';

  constructor(private readonly clock: Clock = systemClock) {}
  private readonly pending = new Map<string, PendingNode>();
  private readonly heaps = Array.from(
    { length: MAX_PRIORITY + 1 },
    () => new BinaryHeap<PendingNode>(dueOrder),
  );
  /** Stale nodes per priority heap, for compaction. */
  private readonly stale = new Array<number>(MAX_PRIORITY + 1).fill(0);
  private readonly claimed = new Map<string, ClaimNode>();
  private readonly leases = new BinaryHeap<ClaimNode>(leaseOrder);
  private staleLeases = 0;
  private closed = false;

  async enqueue(entries: readonly QueueEntry[]): Promise<void> {
    this.assertOpen();
    assertValidEntries(entries);
    for (const entry of entries) this.upsert(entry.taskId, entry.priority, entry.dueAt);
  }

  async claim(max: number, leaseMs: number, now = this.clock.now()): Promise<ClaimedEntry[]> {
    this.assertOpen();
    assertIntegerAtLeast('max', max, 0);
    assertIntegerAtLeast('leaseMs', leaseMs, 1);
    const claimed: ClaimedEntry[] = [];
    const leaseUntil = now + leaseMs;
    for (let priority = MAX_PRIORITY; priority >= 0 && claimed.length < max; priority--) {
      const heap = this.heaps[priority];
      while (claimed.length < max) {
        const top = heap.peek();
        if (!top) break;
        if (this.pending.get(top.taskId) !== top) {
          heap.pop();
          this.stale[priority]--;
          continue;
        }
        // The heap is ordered by due time: once the top is not due, nothing below it is.
        if (top.dueAt > now) break;
        heap.pop();
        this.pending.delete(top.taskId);
        this.setClaim({ ...top, leaseUntil });
        claimed.push({ taskId: top.taskId, priority, dueAt: top.dueAt, leaseUntil });
      }
    }
    return claimed;
  }

  async extend(
    taskIds: readonly string[],
    leaseMs: number,
    now = this.clock.now(),
  ): Promise<string[]> {
    this.assertOpen();
    assertIntegerAtLeast('leaseMs', leaseMs, 1);
    const kept: string[] = [];
    for (const taskId of taskIds) {
      const claim = this.claimed.get(taskId);
      if (!claim) continue;
      this.setClaim({ ...claim, leaseUntil: now + leaseMs });
      kept.push(taskId);
    }
    return kept;
  }

  async ack(taskIds: readonly string[]): Promise<void> {
    this.assertOpen();
    for (const taskId of taskIds) this.dropClaim(taskId);
  }

  async requeueExpired(now = this.clock.now()): Promise<string[]> {
    this.assertOpen();
    const requeued: string[] = [];
    for (;;) {
      const top = this.leases.peek();
      if (!top) break;
      if (this.claimed.get(top.taskId) !== top) {
        this.leases.pop();
        this.staleLeases--;
        continue;
      }
      if (top.leaseUntil > now) break;
      this.leases.pop();
      this.claimed.delete(top.taskId);
      // Pending again as well (re-enqueued while claimed)? Then that entry's priority is the
      // newer word; only the due time comes forward.
      const pending = this.pending.get(top.taskId);
      this.upsert(top.taskId, pending?.priority ?? top.priority, now);
      requeued.push(top.taskId);
    }
    return requeued;
  }

  async remove(taskIds: readonly string[]): Promise<void> {
    this.assertOpen();
    for (const taskId of taskIds) {
      const pending = this.pending.get(taskId);
      if (pending) {
        this.pending.delete(taskId);
        this.markStale(pending.priority);
      }
      this.dropClaim(taskId);
    }
  }

  async contains(taskIds: readonly string[]): Promise<boolean[]> {
    this.assertOpen();
    return taskIds.map((id) => this.pending.has(id) || this.claimed.has(id));
  }

  async size(): Promise<{ pending: number; claimed: number }> {
    this.assertOpen();
    return { pending: this.pending.size, claimed: this.claimed.size };
  }

  async clear(): Promise<void> {
    this.assertOpen();
    this.reset();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.reset();
  }

  /** Adds or moves a pending entry: the earlier due time wins, the given priority is taken. */
  private upsert(taskId: string, priority: number, dueAt: number): void {
    const existing = this.pending.get(taskId);
    if (existing && existing.priority === priority && existing.dueAt <= dueAt) return;
    const node: PendingNode = {
      taskId,
      priority,
      dueAt: existing ? Math.min(existing.dueAt, dueAt) : dueAt,
    };
    this.pending.set(taskId, node);
    this.heaps[priority].push(node);
    // Only after the new node is live, so a compaction triggered here drops the old one.
    if (existing) this.markStale(existing.priority);
  }

  private setClaim(node: ClaimNode): void {
    const replaced = this.claimed.has(node.taskId);
    this.claimed.set(node.taskId, node);
    this.leases.push(node);
    if (replaced) this.markLeaseStale();
  }

  private dropClaim(taskId: string): void {
    if (this.claimed.delete(taskId)) this.markLeaseStale();
  }

  private markStale(priority: number): void {
    const heap = this.heaps[priority];
    if (++this.stale[priority] > COMPACT_AFTER && this.stale[priority] * 2 > heap.size) {
      heap.retain((node) => this.pending.get(node.taskId) === node);
      this.stale[priority] = 0;
    }
  }

  private markLeaseStale(): void {
    if (++this.staleLeases > COMPACT_AFTER && this.staleLeases * 2 > this.leases.size) {
      this.leases.retain((node) => this.claimed.get(node.taskId) === node);
      this.staleLeases = 0;
    }
  }

  private reset(): void {
    this.pending.clear();
    this.claimed.clear();
    for (const heap of this.heaps) heap.clear();
    this.leases.clear();
    this.stale.fill(0);
    this.staleLeases = 0;
  }

  private assertOpen(): void {
    if (this.closed) throw new QueueException(QueueErrorCode.CLOSED, 'memory queue is closed');
  }
}
