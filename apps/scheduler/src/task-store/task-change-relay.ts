import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { LOCK_PROVIDER, Lease, LockProvider } from '@baton/locks';
import { TaskOutcome, TaskStatus } from '@baton/task-contract';
import { Clock, NudgedLoop } from '../common';
import { TransactionRunner } from '../database';
import { SqlRunner } from './sql-runner';
import { TaskChangeConsumer, TaskChangeFeed, TaskStatusChange } from './task-change-feed';

/** Changes handed to a consumer at once. */
const BATCH = 500;
/** How often the outbox is looked at when no commit said so. */
const IDLE_MS = 500;
/**
 * How long a pass waits after a commit for more rows to join its batch, when the last pass had
 * more than one change (a burst: a fan-out's nodes ending). After a pass of one change or none
 * (a chain of nodes, each the only one moving) the next goes at once: the wait would be most of
 * a chain's hand-off from one node to the next.
 */
const LINGER_MS = 8;
/** A consumer whose handler threw waits this long, doubling up to the most. */
const RETRY_BASE_MS = 500;
const RETRY_MAX_MS = 60_000;
/** The lease that makes one process the relay of a consumer (renewed while it lives). */
const LEASE_TTL_MS = 10_000;

/** Where a consumer's delivery stands in this process. */
interface ConsumerState {
  lease: Lease | undefined;
  failures: number;
  notBefore: number;
}

/**
 * Hands each consumer the outbox rows of TaskChangeFeed, oldest first, and deletes them once its
 * handler resolved. One process relays a consumer at a time (a lease per consumer on the lock
 * backend): changes of one task reach it in order. A process that dies mid-batch leaves the rows
 * where they are, and the next holder of the lease hands them over again.
 */
@Injectable()
export class TaskChangeRelay implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('TaskChangeRelay');
  private readonly state = new Map<string, ConsumerState>();
  /** The most changes one consumer took in the last pass. */
  private lastPass = 0;
  private readonly loop: NudgedLoop;

  constructor(
    private readonly feed: TaskChangeFeed,
    private readonly sql: SqlRunner,
    private readonly tx: TransactionRunner,
    private readonly clock: Clock,
    @Inject(LOCK_PROVIDER) private readonly locks: LockProvider,
  ) {
    this.loop = new NudgedLoop(
      clock,
      this.logger,
      () => (this.lastPass > 1 ? LINGER_MS : 0),
      IDLE_MS,
      () => this.deliverOnce(),
    );
  }

  onApplicationBootstrap(): void {
    // Rows committed through this instance are relayed at once; another's within IDLE_MS.
    this.feed.onCommitted(() => this.loop.nudge());
    this.loop.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.loop.stop();
    for (const s of this.state.values()) await s.lease?.release().catch(() => undefined);
  }

  /** One pass over every consumer: what is in the outbox now is handed over (tests call it). */
  async deliverOnce(): Promise<void> {
    this.lastPass = 0;
    for (const consumer of this.feed.subscribers()) {
      try {
        this.lastPass = Math.max(this.lastPass, await this.deliver(consumer));
      } catch (err) {
        this.logger.error(
          `relaying to ${consumer.name} failed: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
    }
  }

  /** Hands the consumer what waits for it; answers how many changes it took. */
  private async deliver(consumer: TaskChangeConsumer): Promise<number> {
    let handed = 0;
    const s = this.stateOf(consumer.name);
    if (this.clock.now() < s.notBefore) return 0;
    if (!(await this.holdLease(consumer.name, s))) return 0;
    for (;;) {
      const changes = await this.next(consumer.name);
      if (changes.length === 0) return handed;
      // The lease may have gone while we read: another process relays now.
      if (s.lease?.lost) return handed;
      try {
        await consumer.handle(changes);
      } catch (err) {
        s.failures++;
        const wait = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (s.failures - 1));
        s.notBefore = this.clock.now() + wait;
        this.logger.warn(
          `${consumer.name} refused ${changes.length} change(s) (${err instanceof Error ? err.message : String(err)}); again in ${wait} ms`,
        );
        return handed;
      }
      s.failures = 0;
      s.notBefore = 0;
      await this.query(
        `DELETE FROM baton_task_change WHERE consumer = ? AND id IN (${changes.map(() => '?').join(', ')})`,
        [consumer.name, ...changes.map((c) => c.id)],
      );
      handed += changes.length;
      if (changes.length < BATCH) return handed;
    }
  }

  private stateOf(name: string): ConsumerState {
    let s = this.state.get(name);
    if (!s) {
      s = { lease: undefined, failures: 0, notBefore: 0 };
      this.state.set(name, s);
    }
    return s;
  }

  /** True while this process holds (or now took) the consumer's relay lease. */
  private async holdLease(name: string, s: ConsumerState): Promise<boolean> {
    if (s.lease && !s.lease.lost) return true;
    s.lease =
      (await this.locks.tryAcquire(`task-changes:${name}`, {
        ttlMs: LEASE_TTL_MS,
        autoRenew: true,
      })) ?? undefined;
    return s.lease !== undefined;
  }

  /**
   * Outside any transaction, but serialized with them on SQLite: on its one connection a read
   * would otherwise see a transaction's rows before they commit (or roll back).
   */
  private async query(sql: string, params: unknown[]): Promise<unknown[]> {
    return (await this.tx.single((m) => this.sql.exec(m, sql, params))).records;
  }

  private async next(consumer: string): Promise<TaskStatusChange[]> {
    const records = await this.query(
      `SELECT id, task_id, task_type, tenant, from_status, to_status, outcome, attempt, created_at
         FROM baton_task_change WHERE consumer = ? ORDER BY id LIMIT ${BATCH}`,
      [consumer],
    );
    return (records as Record<string, unknown>[]).map((r) => ({
      id: Number(r.id),
      taskId: String(r.task_id),
      taskType: String(r.task_type),
      tenant: String(r.tenant),
      from: (r.from_status ?? null) as TaskStatus | null,
      to: r.to_status as TaskStatus,
      outcome: (r.outcome ?? null) as TaskOutcome | null,
      attempt: Number(r.attempt),
      at: Number(r.created_at),
    }));
  }
}
