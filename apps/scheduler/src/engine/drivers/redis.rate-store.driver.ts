import Redis, { Cluster } from 'ioredis';
import { BoundedRedisNode, boundedRedis } from '@baton/locks';
import { KEEP_MS, RateLimit, RateStore, SLACK_MS, shape, stateKey } from '../rate-store';

/**
 * KEYS: the limits' keys, then the holder's reservation key. ARGV: slack, keep, then interval and
 * tolerance per limit. Redis's clock is the one clock of the fleet.
 */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = #KEYS - 1
local res = KEYS[n + 1]
local slack, keep = tonumber(ARGV[1]), tonumber(ARGV[2])
local held = redis.call('GET', res)
if held then
  held = tonumber(held)
  if held <= now + slack then
    redis.call('DEL', res)
    return 0
  end
  return math.ceil(held - now)
end
local slot = now
local tats = {}
for i = 1, n do
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0')
  if tat < now then tat = now end
  tats[i] = tat
  local at = tat - tonumber(ARGV[2 + 2 * i])
  if at > slot then slot = at end
end
for i = 1, n do
  local tat = tats[i]
  redis.call('SET', KEYS[i], tostring(tat + tonumber(ARGV[1 + 2 * i])), 'PX', math.ceil(tat - now) + keep)
end
if slot <= now + slack then return 0 end
redis.call('SET', res, tostring(slot), 'PX', math.ceil(slot - now) + keep)
return math.ceil(slot - now)
`;

export class RedisRateStore implements RateStore {
  private readonly redis: Redis | Cluster;
  /** One hash tag: every key of a call lives in one Cluster slot. */
  private readonly tag: string;

  constructor(connection: BoundedRedisNode, prefix: string) {
    this.tag = `{${prefix}:limits}`;
    this.redis = boundedRedis(connection);
    this.redis.defineCommand('batonRateTake', { lua: TAKE });
  }

  async take(holder: string, limits: readonly RateLimit[]): Promise<number> {
    const keys = [
      ...limits.map((l) => `${this.tag}:rate:${stateKey(l)}`),
      `${this.tag}:res:${holder}`,
    ];
    const args = [SLACK_MS, KEEP_MS];
    for (const l of limits) {
      const s = shape(l);
      args.push(s.interval, s.tolerance);
    }
    const run = (this.redis as unknown as Record<string, (...a: unknown[]) => Promise<number>>)
      .batonRateTake;
    return Number(await run.call(this.redis, keys.length, ...keys, ...args));
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
