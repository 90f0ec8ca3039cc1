import { Clock, systemClock } from '@baton/time';
import Redis, { ChainableCommander, Cluster } from 'ioredis';
import { boundedRedis } from '@baton/locks';
import { RedisQueueConnection } from '../../config';
import { ClaimedEntry, QueueDriver, QueueEntry } from '../queue.driver';
import { assertIntegerAtLeast, assertValidEntries } from '../queue-entry.validation';
import { QueueErrorCode, QueueException } from '../queue.exception';
import { claimOrder, parseClaims, planClaim, shardKeys } from './redis-queue.claims';
import * as lua from './redis-queue.scripts';

export interface RedisQueueDriverOptions {
  /**
   * A client to share (a standalone `Redis` or a `Cluster`; the driver never closes it), or
   * where to connect (the driver opens a client and closes it in `close()`).
   */
  redis: Redis | Cluster | RedisQueueConnection;
  /** Key prefix, e.g. `baton:queue`; must not contain `{` or `}` (it becomes the hash tag). */
  prefix: string;
  /**
   * Shards to spread keys over a Redis Cluster (default 4). A task lives in shard
   * `fnv1a(taskId) % shards`, so changing it strands entries: clear the queue and let the
   * Checker rebuild it from the database when it changes.
   */
  shards?: number;
  /** Where claim and lease times are read (default: the process's clock). */
  clock?: Clock;
  /**
   * On a standalone Redis, claim across all shards in one script call (default true). False
   * takes the Cluster's way there too: a peek at every shard, then a claim per shard (the
   * conformance suite runs both).
   */
  claimInOneTrip?: boolean;
}

/** The scripts, under the command names they are defined with on the client. */
const SCRIPTS = {
  batonQueueEnqueue: lua.ENQUEUE,
  batonQueuePeek: lua.PEEK,
  batonQueueClaim: lua.CLAIM,
  batonQueueExtend: lua.EXTEND,
  batonQueueAck: lua.ACK,
  batonQueueRequeueExpired: lua.REQUEUE_EXPIRED,
  batonQueueRemove: lua.REMOVE,
  batonQueueContains: lua.CONTAINS,
  batonQueueSize: lua.SIZE,
} as const;

/** A script, or `del` for clear(): every call takes a shard's keys first, then its ARGV. */
type ShardCommand = keyof typeof SCRIPTS | 'del' | `batonQueueClaimAll${number}`;
type Invoke = (...args: (string | number)[]) => unknown;

interface ShardCall {
  shard: number;
  /** The keys the call takes, when not its shard's (a claim over every shard). */
  keys?: string[];
  command: ShardCommand;
  args: (string | number)[];
}

const DEFAULT_SHARDS = 4;
const MAX_SHARDS = 1024;
/** Ids per script call: keeps each script short, since Redis serves nothing else while it runs. */
const CHUNK = 500;
/** Lapsed claims moved per script call; the driver calls again while a shard returns a full one. */
const REQUEUE_LIMIT = 1000;
/** Peek-and-claim rounds when concurrent claimers took what a round planned to take. */
const MAX_CLAIM_ROUNDS = 4;

/**
 * The production queue, over ioredis (docs/architecture.md).
 *
 * Layout per shard, all keys under one hash tag (`{prefix:s3}:p9`) so each script touches one
 * Cluster slot: a sorted set per priority scored by dueAt, a claimed sorted set scored by
 * leaseUntil, and two hashes taskId → priority (pending, claimed). See redis-queue.scripts.ts.
 *
 * Every operation is one round trip for the whole batch: ids are grouped by shard, each shard
 * gets one script call, and the calls go in one pipeline. A claim over several shards of one
 * standalone server is one script over all their keys (CLAIM_ALL). On a Cluster it needs two: a read-only peek at every shard's best due entries, merged here so
 * the batch is the global best (priority, then due time, then taskId), then one claim per shard
 * of exactly its share. A claim script takes from the head of the lanes it is given, so a
 * concurrent claimer that got there first costs this one entries, never a duplicate; a short
 * batch is topped up in another round.
 */
export class RedisQueueDriver implements QueueDriver {
  readonly name = 'redis';
  private readonly client: Redis | Cluster;
  private readonly ownsClient: boolean;
  private readonly shards: number;
  /** Each shard's keys in the order the scripts expect them. */
  private readonly keys: string[][];
  private closed = false;
  private readonly clock: Clock;
  /** The one-call claim across shards, when the shards share one server (see CLAIM_ALL). */
  private readonly claimAll: `batonQueueClaimAll${number}` | undefined;

  constructor(options: RedisQueueDriverOptions) {
    this.clock = options.clock ?? systemClock;
    const shards = options.shards ?? DEFAULT_SHARDS;
    if (!Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
      throw new QueueException(
        QueueErrorCode.INVALID_CONFIG,
        `redis queue shards must be an integer 1–${MAX_SHARDS}`,
        { shards },
      );
    }
    if (!options.prefix || /[{}]/.test(options.prefix)) {
      throw new QueueException(
        QueueErrorCode.INVALID_CONFIG,
        'redis queue prefix must be non-empty and free of "{" and "}" (it is the hash tag)',
        { prefix: options.prefix },
      );
    }
    this.shards = shards;
    this.keys = Array.from({ length: shards }, (_, shard) => shardKeys(options.prefix, shard));
    if (options.redis instanceof Redis || options.redis instanceof Cluster) {
      this.client = options.redis;
      this.ownsClient = false;
    } else {
      // A call fails after one reconnect attempt instead of waiting out an outage: the caller
      // (runner, Checker) retries on its own schedule and the database still holds the task.
      this.client = boundedRedis(options.redis, { lazyConnect: false });
      this.ownsClient = true;
    }
    for (const [name, script] of Object.entries(SCRIPTS)) {
      this.client.defineCommand(name, { numberOfKeys: lua.SHARD_KEY_COUNT, lua: script });
    }
    // One shard is one slot even on a Cluster; several are one server on a standalone Redis.
    if (shards === 1 || (!(this.client instanceof Cluster) && options.claimInOneTrip !== false)) {
      // Named by its key count: a client shared by drivers of other shard counts has each.
      this.claimAll = `batonQueueClaimAll${shards}`;
      this.client.defineCommand(this.claimAll, {
        numberOfKeys: lua.SHARD_KEY_COUNT * shards,
        lua: lua.CLAIM_ALL,
      });
    }
  }

  async enqueue(entries: readonly QueueEntry[]): Promise<void> {
    assertValidEntries(entries);
    const calls = this.chunked(
      this.groupByShard(entries, (e) => e.taskId),
      'batonQueueEnqueue',
      (chunk) => chunk.flatMap((e) => [e.taskId, e.priority, e.dueAt]),
    );
    await this.run('enqueue', calls);
  }

  async claim(max: number, leaseMs: number, now = this.clock.now()): Promise<ClaimedEntry[]> {
    assertIntegerAtLeast('max', max, 0);
    assertIntegerAtLeast('leaseMs', leaseMs, 1);
    this.assertOpen();
    if (max === 0) return [];
    const leaseUntil = now + leaseMs;
    if (this.claimAll) {
      // One shard, or shards that share one server: one script over all their keys takes the
      // global best, priority 9 down, in one trip.
      const all = { shard: 0, keys: this.keys.flat(), command: this.claimAll };
      const [reply] = await this.run('claim', [
        { ...all, args: [now, leaseUntil, max, this.shards] },
      ]);
      return parseClaims(reply, leaseUntil);
    }
    const claimed: ClaimedEntry[] = [];
    for (let round = 0; round < MAX_CLAIM_ROUNDS && claimed.length < max; round++) {
      const want = max - claimed.length;
      const peeks = await this.run(
        'claim',
        this.keys.map((_, shard) => ({ shard, command: 'batonQueuePeek', args: [now, want] })),
      );
      const plan = planClaim(peeks, want);
      if (plan.total === 0) break;
      const calls: ShardCall[] = [];
      for (const [shard, lanes] of plan.byShard) {
        const total = lanes.reduce((sum, [, count]) => sum + count, 0);
        calls.push({
          shard,
          command: 'batonQueueClaim',
          args: [now, leaseUntil, total, ...lanes.flat()],
        });
      }
      const replies = await this.run('claim', calls);
      const got = replies.flatMap((reply) => parseClaims(reply, leaseUntil));
      claimed.push(...got);
      // Everything planned was there: what was due is taken (or the batch is full).
      if (got.length === plan.total) break;
    }
    return claimed.sort(claimOrder);
  }

  async extend(
    taskIds: readonly string[],
    leaseMs: number,
    now = this.clock.now(),
  ): Promise<string[]> {
    assertIntegerAtLeast('leaseMs', leaseMs, 1);
    const leaseUntil = now + leaseMs;
    const calls = this.chunked(
      this.groupByShard(taskIds, (taskId) => taskId),
      'batonQueueExtend',
      (chunk) => [leaseUntil, ...chunk],
    );
    const replies = await this.run('extend', calls);
    return replies.flatMap((reply) => reply as string[]);
  }

  async ack(taskIds: readonly string[]): Promise<void> {
    await this.run(
      'ack',
      this.chunked(
        this.groupByShard(taskIds, (taskId) => taskId),
        'batonQueueAck',
        (chunk) => chunk,
      ),
    );
  }

  async requeueExpired(now = this.clock.now()): Promise<string[]> {
    const requeued: string[] = [];
    let shards = this.keys.map((_, shard) => shard);
    while (shards.length > 0) {
      const replies = await this.run(
        'requeueExpired',
        shards.map((shard) => ({
          shard,
          command: 'batonQueueRequeueExpired',
          args: [now, REQUEUE_LIMIT],
        })),
      );
      const full: number[] = [];
      replies.forEach((reply, i) => {
        const ids = reply as string[];
        requeued.push(...ids);
        if (ids.length === REQUEUE_LIMIT) full.push(shards[i]);
      });
      shards = full;
    }
    return requeued;
  }

  async remove(taskIds: readonly string[]): Promise<void> {
    await this.run(
      'remove',
      this.chunked(
        this.groupByShard(taskIds, (taskId) => taskId),
        'batonQueueRemove',
        (chunk) => chunk,
      ),
    );
  }

  async contains(taskIds: readonly string[]): Promise<boolean[]> {
    // Ask per shard, then put the answers back in the caller's order.
    const indexed = taskIds.map((taskId, index) => ({ taskId, index }));
    const groups = this.groupByShard(indexed, (e) => e.taskId);
    const calls: ShardCall[] = [];
    const order: number[][] = [];
    for (const [shard, entries] of groups) {
      for (let i = 0; i < entries.length; i += CHUNK) {
        const chunk = entries.slice(i, i + CHUNK);
        calls.push({ shard, command: 'batonQueueContains', args: chunk.map((e) => e.taskId) });
        order.push(chunk.map((e) => e.index));
      }
    }
    const replies = await this.run('contains', calls);
    const found = new Array<boolean>(taskIds.length).fill(false);
    replies.forEach((reply, i) => {
      (reply as number[]).forEach((flag, j) => (found[order[i][j]] = flag === 1));
    });
    return found;
  }

  async size(): Promise<{ pending: number; claimed: number }> {
    const replies = await this.run(
      'size',
      this.keys.map((_, shard) => ({ shard, command: 'batonQueueSize', args: [] })),
    );
    let pending = 0;
    let claimed = 0;
    for (const reply of replies) {
      const [p, c] = reply as number[];
      pending += p;
      claimed += c;
    }
    return { pending, claimed };
  }

  async clear(): Promise<void> {
    // The key names are fixed, so no SCAN: one DEL per shard (one slot each).
    await this.run(
      'clear',
      this.keys.map((_, shard) => ({ shard, command: 'del', args: [] })),
    );
  }

  reconnect(): void {
    if (this.closed || !this.ownsClient) return;
    this.client.disconnect(true);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.ownsClient) return;
    // QUIT only on a live connection: while (re)connecting, ioredis answers it at once and keeps
    // its reconnect timer running, which would hold the process open.
    if (this.client.status === 'ready') {
      try {
        await this.client.quit();
        return;
      } catch {
        // The connection broke meanwhile; drop it below.
      }
    }
    this.client.disconnect();
  }

  /** The shard a task lives in: FNV-1a of its id, stable across processes and restarts. */
  shardOf(taskId: string): number {
    let hash = 0x811c9dc5;
    for (let i = 0; i < taskId.length; i++) {
      hash ^= taskId.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193);
    }
    return (hash >>> 0) % this.shards;
  }

  private groupByShard<T>(items: readonly T[], idOf: (item: T) => string): Map<number, T[]> {
    const groups = new Map<number, T[]>();
    for (const item of items) {
      const shard = this.shardOf(idOf(item));
      const group = groups.get(shard);
      if (group) group.push(item);
      else groups.set(shard, [item]);
    }
    return groups;
  }

  private chunked<T>(
    groups: Map<number, T[]>,
    command: ShardCommand,
    args: (chunk: T[]) => (string | number)[],
  ): ShardCall[] {
    const calls: ShardCall[] = [];
    for (const [shard, items] of groups) {
      for (let i = 0; i < items.length; i += CHUNK) {
        calls.push({ shard, command, args: args(items.slice(i, i + CHUNK)) });
      }
    }
    return calls;
  }

  /**
   * Sends the calls in one round trip and returns their replies in order. A standalone client
   * gets one pipeline; a Cluster gets concurrent calls instead, since ioredis sends a pipeline
   * to one node only and the shards live on several.
   */
  private async run(op: string, calls: ShardCall[]): Promise<unknown[]> {
    this.assertOpen();
    if (calls.length === 0) return [];
    try {
      if (calls.length === 1 || this.client instanceof Cluster) {
        return await Promise.all(calls.map((call) => this.send(this.client, call)));
      }
      const pipeline = this.client.pipeline();
      for (const call of calls) void this.send(pipeline, call);
      const results = (await pipeline.exec()) ?? [];
      if (results.length !== calls.length) {
        throw new Error(`pipeline answered ${results.length} of ${calls.length} calls`);
      }
      return results.map(([error, reply]) => {
        if (error) throw error;
        return reply;
      });
    } catch (error) {
      throw new QueueException(
        QueueErrorCode.BACKEND_UNAVAILABLE,
        `redis queue ${op} failed: ${(error as Error).message}`,
        { op },
        { cause: error },
      );
    }
  }

  private send(target: Redis | Cluster | ChainableCommander, call: ShardCall): unknown {
    // The scripts are defined at runtime (defineCommand), so the client's types do not list them.
    const invoke = (target as unknown as Record<ShardCommand, Invoke>)[call.command].bind(target);
    return invoke(...(call.keys ?? this.keys[call.shard]), ...call.args);
  }

  private assertOpen(): void {
    if (this.closed) throw new QueueException(QueueErrorCode.CLOSED, 'redis queue is closed');
  }
}
