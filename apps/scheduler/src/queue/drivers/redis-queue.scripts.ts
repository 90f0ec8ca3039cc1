/**
 * The Redis queue's Lua scripts. Each runs against ONE shard, whose keys all share a hash tag
 * and so one Redis Cluster slot, and every mutation is one script: atomic without MULTI, and a
 * whole batch costs one round trip.
 *
 * KEYS of every script, in this order (SHARD_KEY_COUNT of them):
 *   1..10  pending sorted set of priority 0..9, scored by dueAt (ties: member order = taskId)
 *   11     claimed sorted set, scored by leaseUntil
 *   12     hash taskId -> priority of the pending entry (so an enqueue can find and move it)
 *   13     hash taskId -> priority of the claimed entry (so an expired claim returns to its lane)
 * Values that are epoch ms travel as strings and are compared with tonumber, so no rounding
 * on the way through Lua's doubles changes a score.
 */

/** Number of keys per shard passed to every script. */
export const SHARD_KEY_COUNT = 13;

/** ARGV: taskId, priority, dueAt, taskId, ... The earlier due wins; the given priority is taken. */
export const ENQUEUE = `
for i = 1, #ARGV, 3 do
  local id, p, due = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local old = redis.call('hget', KEYS[12], id)
  if old then
    local oldKey = KEYS[tonumber(old) + 1]
    local oldDue = redis.call('zscore', oldKey, id)
    if oldDue and tonumber(oldDue) < tonumber(due) then due = oldDue end
    if old ~= p then redis.call('zrem', oldKey, id) end
  end
  redis.call('zadd', KEYS[tonumber(p) + 1], due, id)
  redis.call('hset', KEYS[12], id, p)
end
return 0
`;

/**
 * Read-only. ARGV: now, max. The shard's best `max` due entries, priority 9 down, as flat
 * triples priority, taskId, dueAt: what the client merges across shards before it claims.
 */
export const PEEK = `
local out, n, max = {}, 0, tonumber(ARGV[2])
for p = 9, 0, -1 do
  if n >= max then break end
  local r = redis.call('zrangebyscore', KEYS[p + 1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, max - n)
  for j = 1, #r, 2 do
    out[#out + 1] = p
    out[#out + 1] = r[j]
    out[#out + 1] = r[j + 1]
    n = n + 1
  end
end
return out
`;

/**
 * ARGV: now, leaseUntil, cap, then pairs priority, count. Takes up to `count` due entries from
 * the head of each listed priority (in the order given), at most `cap` in all, and moves them to
 * the claimed set. Returns flat triples taskId, priority, dueAt.
 */
export const CLAIM = `
local out, n, cap = {}, 0, tonumber(ARGV[3])
for i = 4, #ARGV, 2 do
  if n >= cap then break end
  local p = ARGV[i]
  local key = KEYS[tonumber(p) + 1]
  local want = math.min(tonumber(ARGV[i + 1]), cap - n)
  local r = redis.call('zrangebyscore', key, '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, want)
  for j = 1, #r, 2 do
    local id = r[j]
    redis.call('zrem', key, id)
    redis.call('hdel', KEYS[12], id)
    redis.call('zadd', KEYS[11], ARGV[2], id)
    redis.call('hset', KEYS[13], id, p)
    out[#out + 1] = id
    out[#out + 1] = p
    out[#out + 1] = r[j + 1]
    n = n + 1
  end
end
return out
`;

/**
 * The claim of CLAIM across every shard in one call, for a standalone Redis (all shards on one
 * server; a Cluster's shards live in other slots, so it peeks first and claims per shard). KEYS:
 * every shard's SHARD_KEY_COUNT keys, shard 0 first. ARGV: now, leaseUntil, cap, shards. Takes the
 * best `cap` due entries of all shards: priority 9 down, then the earliest due, then taskId (the
 * order one shard's sorted set keeps). Returns flat triples taskId, priority, dueAt.
 */
export const CLAIM_ALL = `
local now, lease, cap, shards = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local K = ${SHARD_KEY_COUNT}
local out, n = {}, 0
for p = 9, 0, -1 do
  if n >= cap then break end
  local found = {}
  for s = 0, shards - 1 do
    local r = redis.call('zrangebyscore', KEYS[s * K + p + 1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, cap - n)
    for j = 1, #r, 2 do found[#found + 1] = { r[j], tonumber(r[j + 1]), r[j + 1], s * K } end
  end
  table.sort(found, function(a, b)
    if a[2] ~= b[2] then return a[2] < b[2] end
    return a[1] < b[1]
  end)
  for i = 1, math.min(#found, cap - n) do
    local id, base = found[i][1], found[i][4]
    redis.call('zrem', KEYS[base + p + 1], id)
    redis.call('hdel', KEYS[base + 12], id)
    redis.call('zadd', KEYS[base + 11], lease, id)
    redis.call('hset', KEYS[base + 13], id, p)
    out[#out + 1] = id
    out[#out + 1] = tostring(p)
    out[#out + 1] = found[i][3]
    n = n + 1
  end
end
return out
`;

/** ARGV: leaseUntil, taskId, ... Returns the ids that were still claimed (and now extended). */
export const EXTEND = `
local kept = {}
for i = 2, #ARGV do
  if redis.call('zscore', KEYS[11], ARGV[i]) then
    redis.call('zadd', KEYS[11], ARGV[1], ARGV[i])
    kept[#kept + 1] = ARGV[i]
  end
end
return kept
`;

/** ARGV: taskId, ... Drops the claims; a pending entry of the same task stays. */
export const ACK = `
for i = 1, #ARGV do
  redis.call('zrem', KEYS[11], ARGV[i])
  redis.call('hdel', KEYS[13], ARGV[i])
end
return 0
`;

/**
 * ARGV: now, limit. Moves up to `limit` claims whose lease lapsed (leaseUntil <= now) back to
 * pending, due now; returns their ids. The limit keeps one script short (Redis blocks while it
 * runs); the client calls again while a call comes back full.
 */
export const REQUEUE_EXPIRED = `
local ids = redis.call('zrangebyscore', KEYS[11], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  -- A claim without its priority cannot come from these scripts; lane 0 still beats losing it.
  local p = redis.call('hget', KEYS[13], id) or '0'
  redis.call('zrem', KEYS[11], id)
  redis.call('hdel', KEYS[13], id)
  local pending = redis.call('hget', KEYS[12], id)
  if pending then
    -- Re-enqueued while claimed: that entry's priority is the newer word; only bring it forward.
    local key = KEYS[tonumber(pending) + 1]
    local due = redis.call('zscore', key, id)
    if (not due) or tonumber(due) > tonumber(ARGV[1]) then redis.call('zadd', key, ARGV[1], id) end
  else
    redis.call('zadd', KEYS[tonumber(p) + 1], ARGV[1], id)
    redis.call('hset', KEYS[12], id, p)
  end
end
return ids
`;

/** ARGV: taskId, ... Removes pending and claimed entries alike. */
export const REMOVE = `
for i = 1, #ARGV do
  local id = ARGV[i]
  local p = redis.call('hget', KEYS[12], id)
  if p then
    redis.call('zrem', KEYS[tonumber(p) + 1], id)
    redis.call('hdel', KEYS[12], id)
  end
  redis.call('zrem', KEYS[11], id)
  redis.call('hdel', KEYS[13], id)
end
return 0
`;

/** Read-only. ARGV: taskId, ... Returns 1 (pending or claimed) or 0 per id. */
export const CONTAINS = `
local out = {}
for i = 1, #ARGV do
  local found = redis.call('hexists', KEYS[12], ARGV[i]) == 1 or redis.call('zscore', KEYS[11], ARGV[i])
  out[i] = found and 1 or 0
end
return out
`;

/** Read-only. Returns {pending, claimed}, counted from the sorted sets themselves. */
export const SIZE = `
local pending = 0
for p = 1, 10 do pending = pending + redis.call('zcard', KEYS[p]) end
return {pending, redis.call('zcard', KEYS[11])}
`;
