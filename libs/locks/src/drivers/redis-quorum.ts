import { randomBytes } from 'node:crypto';
import Redis, { Cluster } from 'ioredis';
import { Clock } from '@baton/time';

/**
 * The Redlock algorithm over one or several independent Redis servers (a Redis Cluster counts as
 * one: a key lives on the master serving its slot), as the project's own few scripts (it
 * replaces the `redlock` package, whose maintained line never left pre-release): a
 * key is taken when a quorum of servers set it to this holder's random value within the TTL
 * (less the time the round took and a clock-drift allowance), extended and released only where
 * the value is still ours. Each server's answer is a vote: for, against (the key is someone
 * else's), or none (the server did not answer).
 */

/** Extends the key's TTL only while its value is ours. */
const EXTEND = `
  if redis.call("get", KEYS[1]) ~= ARGV[1] then
    return 0
  end
  redis.call("pexpire", KEYS[1], ARGV[2])
  return 1
`;

/** Deletes the key only while its value is ours. */
const RELEASE = `
  if redis.call("get", KEYS[1]) ~= ARGV[1] then
    return 0
  end
  redis.call("del", KEYS[1])
  return 1
`;

/** A key taken on a quorum: its value (this holder's token) and until when it is surely ours. */
export interface QuorumLock {
  readonly resource: string;
  readonly value: string;
  /** This process's clock: past it, the lock may be someone else's (TTL less drift). */
  expiresAt: number;
}

/** How one round over the servers went. */
export interface Round {
  /** A quorum voted for. */
  won: boolean;
  /** Held by someone else (or, on extend/release, not ours): the "against" votes alone deny a quorum. */
  contended: boolean;
  /** The first error of a server that did not answer, when any. */
  error?: unknown;
}

export class RedisQuorum {
  readonly quorum: number;

  constructor(
    private readonly clients: (Redis | Cluster)[],
    private readonly clock: Clock,
    private readonly driftFactor = 0.01,
  ) {
    this.quorum = Math.floor(clients.length / 2) + 1;
  }

  /**
   * Takes `resource` for `ttlMs` with `script` (KEYS: the resource; ARGV: value, TTL; returns a
   * positive number where it set the key, 0 where the key is held). A round short of a quorum,
   * or one that took so long the lock would already be expiring, is undone where it had set the
   * key.
   */
  async acquire(
    resource: string,
    ttlMs: number,
    script: string,
  ): Promise<{ lock?: QuorumLock; round: Round }> {
    const value = randomBytes(16).toString('hex');
    const started = this.clock.now();
    const round = await this.vote((c) => c.eval(script, 1, resource, value, ttlMs));
    const validity = ttlMs - (this.clock.now() - started) - this.drift(ttlMs);
    if (round.won && validity > 0)
      return { lock: { resource, value, expiresAt: started + validity }, round };
    await this.vote((c) => c.eval(RELEASE, 1, resource, value));
    return { round: { ...round, won: false } };
  }

  /** Extends a lock still within its time; the new expiry is set on success. */
  async extend(lock: QuorumLock, ttlMs: number): Promise<Round> {
    if (this.clock.now() >= lock.expiresAt) return { won: false, contended: true };
    const started = this.clock.now();
    const round = await this.vote((c) => c.eval(EXTEND, 1, lock.resource, lock.value, ttlMs));
    const validity = ttlMs - (this.clock.now() - started) - this.drift(ttlMs);
    if (round.won && validity > 0) lock.expiresAt = started + validity;
    return { ...round, won: round.won && validity > 0 };
  }

  /** Deletes the key wherever it is still ours. */
  release(lock: QuorumLock): Promise<Round> {
    return this.vote((c) => c.eval(RELEASE, 1, lock.resource, lock.value));
  }

  /** One call on every server at once, counted as votes. */
  private async vote(call: (client: Redis | Cluster) => Promise<unknown>): Promise<Round> {
    const answers = await Promise.allSettled(this.clients.map(call));
    let votesFor = 0;
    let against = 0;
    let error: unknown;
    for (const a of answers) {
      if (a.status === 'rejected') error ??= a.reason;
      else if (Number(a.value) > 0) votesFor++;
      else against++;
    }
    return {
      won: votesFor >= this.quorum,
      // Held: the "against" votes alone keep a quorum out of reach, whatever the servers that
      // did not answer do (one server down of three must not turn a held key into "unavailable").
      contended: against > this.clients.length - this.quorum,
      error,
    };
  }

  /** Redlock's allowance for clocks that run at different speeds, plus 2 ms. */
  private drift(ttlMs: number): number {
    return Math.round(ttlMs * this.driftFactor) + 2;
  }
}
