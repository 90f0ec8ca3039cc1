import { Clock, systemClock } from '@baton/time';
import { QuorumLock, RedisQuorum, Round } from './redis-quorum';
import { boundedRedis } from './redis-timeouts';
import Redis, { Cluster } from 'ioredis';
import { BaseLockProvider } from '../base-lock.provider';
import { HeldKey } from '../held-key.interface';
import { RedisLockConfig } from '../lock-config.interface';
import { LockErrorCode, LockException } from '../lock.exception';
import { LockState } from '../lock-provider.interface';
import { freeState } from '../lock-state';
import { Backoff, KeyWaiters } from '../wait';

/**
 * The take, with a fence: for every key it takes, it INCRs `<key>:fence` in the same atomic
 * script, so a fence is taken if and only if the lock is. The counter is never expired, so it
 * survives holders and (with persistence) restarts. It returns `#KEYS` where it took the key
 * (a vote for, in RedisQuorum) and 0 where the key is held (a vote against).
 *
 * The fence and holder keys of this and the scripts below are the lock key with a suffix: the
 * lock key's hash tag (see `resource`) puts them in its slot, as a Redis Cluster requires of
 * every key one script touches.
 */
const ACQUIRE_WITH_FENCE = `
  for i, key in ipairs(KEYS) do
    if redis.call("exists", key) == 1 then
      return 0
    end
  end
  for i, key in ipairs(KEYS) do
    redis.call("incr", key .. ":fence")
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end
  return #KEYS
`;

/** The fence of a key we hold, or -1 when the lock value is not ours (any more). */
const READ_FENCE = `
  if redis.call("get", KEYS[1]) ~= ARGV[1] then
    return -1
  end
  return tonumber(redis.call("get", KEYS[1] .. ":fence") or "0")
`;

/**
 * Lifts a counter to at least ARGV[1]: with several independent servers the fence handed out
 * is the maximum over the quorum, and every server's counter is raised to it so the next
 * holder's quorum (which overlaps ours in at least one server) counts above it.
 */
const RAISE_FENCE = `
  local current = tonumber(redis.call("get", KEYS[1]) or "0")
  if current < tonumber(ARGV[1]) then
    redis.call("set", KEYS[1], ARGV[1])
  end
  return 1
`;

/**
 * Writes the holder's record `<key>:holder` (token, fence, label as JSON) only while the lock
 * value is still ours. The record has no TTL (like the fence counter) and is overwritten by the
 * next labelled holder; `inspect` believes it only when its token is the lock's current value.
 */
const WRITE_HOLDER = `
  if redis.call("get", KEYS[1]) ~= ARGV[1] then
    return 0
  end
  redis.call("set", KEYS[1] .. ":holder", ARGV[2])
  return 1
`;

/** One node's view of a key, read atomically: value, PTTL, fence counter, holder record. */
const READ_STATE = `
  return {
    redis.call("get", KEYS[1]) or "",
    redis.call("pttl", KEYS[1]),
    redis.call("get", KEYS[1] .. ":fence") or "0",
    redis.call("get", KEYS[1] .. ":holder") or ""
  }
`;

/**
 * Redis locks on one server (or one Redis Cluster), or on several independent ones with the
 * Redlock algorithm (RedisQuorum). Waiting: a release is published on one channel per prefix
 * (a Cluster passes it to every node, so a subscriber on any of them hears it) and wakes waiters
 * at once; keys freed by expiry are found by polling capped at the key's remaining TTL.
 */
export class RedisLockDriver extends BaseLockProvider {
  readonly driver = 'redis' as const;
  private readonly clients: (Redis | Cluster)[];
  private readonly subscribers: (Redis | Cluster)[];
  private readonly quorum: RedisQuorum;
  private readonly prefix: string;
  private readonly channel: string;
  private readonly maxPollMs: number;
  private readonly waiters: KeyWaiters;
  private subscribed: Promise<void> | undefined;

  constructor(config: RedisLockConfig, clock: Clock = systemClock) {
    super(clock);
    this.waiters = new KeyWaiters(clock);
    if (config.nodes.length === 0) {
      throw new LockException(
        LockErrorCode.INVALID_CONFIG,
        'redis lock driver needs at least one node',
      );
    }
    this.prefix = config.keyPrefix ?? 'baton:lock:';
    this.channel = `${this.prefix}released`;
    this.maxPollMs = config.maxPollMs ?? 200;
    // Calls fail fast while a node is down instead of queueing for minutes (boundedRedis).
    const connect = (subscriber: boolean): (Redis | Cluster)[] =>
      config.nodes.map((n) =>
        boundedRedis(n, { lazyConnect: true, enableOfflineQueue: true, subscriber }),
      );
    this.clients = connect(false);
    this.subscribers = connect(true);
    this.quorum = new RedisQuorum(this.clients, clock, config.driftFactor ?? 0.01);
  }

  async acquireKey(
    key: string,
    ttlMs: number,
    deadline: number,
    label?: string,
  ): Promise<HeldKey | null> {
    await this.subscribe();
    const resource = this.resource(key);
    const backoff = new Backoff(10, this.maxPollMs, this.clock);
    for (;;) {
      if (this.closed) throw new LockException(LockErrorCode.CLOSED, 'redis provider is closed');
      const epoch = this.waiters.epoch(key);
      // Redis starts the PX after this; the holder's clock must not start it earlier.
      const attemptAt = this.clock.now();
      const { lock, round } = await this.quorum.acquire(resource, ttlMs, ACQUIRE_WITH_FENCE);
      if (!lock && !round.contended && round.error !== undefined)
        throw unavailable('acquire', round.error);
      if (lock) {
        const fence = await this.fenceOf(lock);
        if (fence !== null) {
          if (label !== undefined) await this.writeHolder(lock, fence, label);
          return this.heldKey(key, lock, fence, attemptAt);
        }
        // The fence is not on a quorum: the next holder might count below it. Give the
        // lock back and try again; servers that stay unreachable end it as unavailable.
        await this.quorum.release(lock).catch(() => undefined);
        if (this.clock.now() >= deadline) {
          throw new LockException(
            LockErrorCode.BACKEND_UNAVAILABLE,
            `could not record the fence of "${key}" on a quorum of Redis servers`,
            { key },
          );
        }
      } else if (this.clock.now() >= deadline) {
        return null;
      }
      const pttl = await this.clients[0].pttl(resource).catch(() => this.maxPollMs);
      const wait = Math.min(backoff.next(deadline), pttl > 0 ? pttl : this.maxPollMs);
      await this.waiters.wait(key, Math.max(wait, 1), epoch);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.waiters.notifyAll();
    await Promise.allSettled([...this.clients, ...this.subscribers].map((c) => c.quit()));
    for (const c of [...this.clients, ...this.subscribers]) c.disconnect();
  }

  /**
   * A key is held when a quorum of nodes hold one value (what an acquire counts as taken). The
   * fence is the holder's record's when its token matches, else the highest counter among the
   * nodes holding the value; the expiry is the shortest PTTL among them, on this process's clock.
   */
  async inspectKey(key: string): Promise<LockState> {
    const resource = this.resource(key);
    const quorum = Math.floor(this.clients.length / 2) + 1;
    const askedAt = this.clock.now();
    const answers = await Promise.allSettled(
      this.clients.map(
        (c) => c.eval(READ_STATE, 1, resource) as Promise<[string, number, string, string]>,
      ),
    );
    const views = answers
      .filter((a): a is PromiseFulfilledResult<[string, number, string, string]> => {
        return a.status === 'fulfilled';
      })
      .map(({ value: [value, pttl, counter, record] }) => ({
        value,
        pttl: Number(pttl),
        counter: Number(counter),
        record,
      }));
    if (views.length < quorum) {
      const failed = answers.find((a) => a.status === 'rejected');
      throw unavailable('inspect', failed?.reason ?? new Error('no quorum of nodes answered'));
    }
    const votes = new Map<string, number>();
    for (const v of views) if (v.value) votes.set(v.value, (votes.get(v.value) ?? 0) + 1);
    const token = [...votes].find(([, n]) => n >= quorum)?.[0];
    if (token === undefined) return freeState(key);
    const holding = views.filter((v) => v.value === token);
    const record = holding.map((v) => parseRecord(v.record)).find((r) => r?.token === token);
    const ttls = holding.map((v) => v.pttl).filter((t) => t > 0);
    return {
      key,
      held: true,
      holder: record?.label ?? null,
      token,
      fence: record?.fence ?? Math.max(...holding.map((v) => v.counter)),
      expiresAt: ttls.length > 0 ? new Date(askedAt + Math.min(...ttls)) : null,
    };
  }

  /**
   * Best effort on every node: a label that reached no node leaves the holding unnamed in
   * `inspect`, never refuses the lock that was taken.
   */
  private async writeHolder(lock: QuorumLock, fence: number, label: string): Promise<void> {
    const { resource } = lock;
    const record = JSON.stringify({ token: lock.value, fence, label });
    await Promise.allSettled(
      this.clients.map((c) => c.eval(WRITE_HOLDER, 1, resource, lock.value, record)),
    );
  }

  private resource(key: string): string {
    // The hash tag keeps a key and its fence counter in one slot on a Redis Cluster.
    return `${this.prefix}{${key}}`;
  }

  /**
   * The fence for a lock just taken: the maximum over a quorum of servers holding it, recorded
   * on a quorum. Null when either step reached fewer servers (the next holder's quorum might
   * then miss every server that knows this fence, and count below it).
   */
  private async fenceOf(lock: QuorumLock): Promise<number | null> {
    const { resource } = lock;
    const quorum = Math.floor(this.clients.length / 2) + 1;
    const reads = await Promise.allSettled(
      this.clients.map((c) => c.eval(READ_FENCE, 1, resource, lock.value) as Promise<number>),
    );
    const fences = reads
      .filter((r): r is PromiseFulfilledResult<number> => r.status === 'fulfilled')
      .map((r) => Number(r.value))
      .filter((f) => f > 0);
    if (fences.length === 0) {
      throw new LockException(LockErrorCode.LEASE_LOST, `lost "${resource}" right after taking it`);
    }
    if (fences.length < quorum) return null;
    const fence = Math.max(...fences);
    if (this.clients.length > 1) {
      const raises = await Promise.allSettled(
        this.clients.map((c) => c.eval(RAISE_FENCE, 1, `${resource}:fence`, fence)),
      );
      if (raises.filter((r) => r.status === 'fulfilled').length < quorum) return null;
    }
    return fence;
  }

  private heldKey(key: string, lock: QuorumLock, fence: number, takenAt: number): HeldKey {
    /** A round that did not win: the key is not ours (any more), or servers did not answer. */
    const lost = (operation: string, round: Round): LockException =>
      round.contended || round.error === undefined
        ? new LockException(LockErrorCode.NOT_HOLDER, `"${key}" is not held by this lease`, {
            key,
          })
        : unavailable(operation, round.error);
    return {
      key,
      fence,
      takenAt,
      extend: async (ttlMs) => {
        const round = await this.quorum.extend(lock, ttlMs);
        if (!round.won) throw lost('extend', round);
      },
      release: async () => {
        const round = await this.quorum.release(lock);
        if (!round.won) throw lost('release', round);
        // On every node: a waiter subscribed to a node that is up hears it.
        await Promise.allSettled(this.clients.map((c) => c.publish(this.channel, key)));
      },
      // Redis pushes nothing to a holder: loss shows as a refused extend (renewer reports it).
      setLostHandler: () => undefined,
    };
  }

  private subscribe(): Promise<void> {
    this.subscribed ??= (async () => {
      const results = await Promise.allSettled(
        this.subscribers.map(async (s) => {
          // Once per connection: a retried subscribe must not add a second listener.
          if (s.listenerCount('message') === 0) {
            s.on('message', (_channel: string, key: string) => this.waiters.notify(key));
          }
          await s.subscribe(this.channel);
        }),
      );
      // Wake-ups are an optimisation (waiters also poll): one node down must not fail every
      // acquire when a quorum of servers answers. None subscribed is a Redis that is down.
      const failed = results.filter((r) => r.status === 'rejected');
      if (failed.length === results.length) throw failed[0].reason;
    })().catch((error: unknown) => {
      this.subscribed = undefined;
      throw unavailable('subscribe', error);
    });
    return this.subscribed;
  }
}

/** A holder record as WRITE_HOLDER stored it, or undefined when absent or unreadable. */
function parseRecord(
  text: string,
): { token: string; fence: number; label: string | null } | undefined {
  if (!text) return undefined;
  try {
    const r = JSON.parse(text) as { token?: unknown; fence?: unknown; label?: unknown };
    if (typeof r.token !== 'string' || typeof r.fence !== 'number') return undefined;
    return { token: r.token, fence: r.fence, label: typeof r.label === 'string' ? r.label : null };
  } catch {
    return undefined;
  }
}

function unavailable(operation: string, error: unknown): LockException {
  if (error instanceof LockException) return error;
  return new LockException(
    LockErrorCode.BACKEND_UNAVAILABLE,
    `Redis lock ${operation} failed: ${(error as Error).message}`,
    undefined,
    { cause: error },
  );
}
