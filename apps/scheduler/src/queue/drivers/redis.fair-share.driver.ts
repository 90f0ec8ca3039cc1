import { Clock, Timer, systemClock } from '@baton/time';
import Redis, { Cluster } from 'ioredis';
import { BoundedRedisNode, boundedRedis } from '@baton/locks';
import { BURST_OF_SECOND, FairShare, KEEP_MS, second } from '../fair-share';

/**
 * KEYS: the tenant's bucket, tenants now, starts a second ago, tenants a second ago.
 * ARGV: tenant, n, minShare, keep, burst share of a second.
 */
const ADMIT = `
local n, minShare, keep = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], keep)
local starts = tonumber(redis.call('GET', KEYS[3]) or '0')
local tenants = redis.call('SCARD', KEYS[4])
if tenants < 1 then tenants = 1 end
local rate = starts / tenants
if rate < minShare then rate = minShare end
local burst = rate * tonumber(ARGV[5])
if burst < 1 then burst = 1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(b[1]), tonumber(b[2])
if tokens == nil then tokens = burst; at = now end
tokens = tokens + (now - at) / 1000 * rate
if tokens > burst then tokens = burst end
local within = math.floor(tokens)
if within > n then within = n end
if within < 0 then within = 0 end
tokens = tokens - within
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], keep)
return within
`;

/** Starts are summed this long before they are written (a tenth of the second they count in). */
const STARTS_FLUSH_MS = 100;

/** In Redis, beside the queue: every instance counts into the same seconds. */
export class RedisFairShare implements FairShare {
  private readonly redis: Redis | Cluster;
  private readonly tag: string;
  private unwritten = 0;
  private unwrittenSecond: number | undefined;
  private flushTimer: Timer | undefined;

  constructor(
    connection: BoundedRedisNode,
    prefix: string,
    private readonly minShare: number,
    private readonly clock: Clock = systemClock,
  ) {
    this.tag = `{${prefix}:fair}`;
    this.redis = boundedRedis(connection);
    this.redis.defineCommand('batonFairAdmit', { numberOfKeys: 4, lua: ADMIT });
  }

  async admit(tenant: string, n: number): Promise<number> {
    const s = second(this.clock.now());
    const run = (this.redis as unknown as Record<string, (...a: unknown[]) => Promise<number>>)
      .batonFairAdmit;
    return Number(
      await run.call(
        this.redis,
        `${this.tag}:bucket:${tenant}`,
        `${this.tag}:tenants:${s}`,
        `${this.tag}:starts:${s - 1}`,
        `${this.tag}:tenants:${s - 1}`,
        tenant,
        n,
        this.minShare,
        KEEP_MS,
        BURST_OF_SECOND,
      ),
    );
  }

  /** Counted here and written at most every STARTS_FLUSH_MS: a round trip per claim is too many. */
  started(n: number): void {
    if (n <= 0) return;
    this.unwritten += n;
    if (this.unwrittenSecond === undefined) this.unwrittenSecond = second(this.clock.now());
    if (!this.flushTimer) {
      this.flushTimer = this.clock.setTimeout(() => void this.flushStarts(), STARTS_FLUSH_MS);
      this.flushTimer.unref();
    }
  }

  /** Writes the starts summed so far, in the second the first of them was made. */
  private async flushStarts(): Promise<void> {
    this.clock.clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const n = this.unwritten;
    const at = this.unwrittenSecond;
    this.unwritten = 0;
    this.unwrittenSecond = undefined;
    if (n <= 0 || at === undefined) return;
    const key = `${this.tag}:starts:${at}`;
    await this.redis
      .multi()
      .incrby(key, n)
      .pexpire(key, KEEP_MS)
      .exec()
      .catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.flushStarts();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
