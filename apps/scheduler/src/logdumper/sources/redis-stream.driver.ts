import Redis, { Cluster } from 'ioredis';
import { BoundedRedisNode, boundedRedis } from '@baton/locks';

/** One stream entry: its id and its field map (null when the entry was deleted meanwhile). */
export interface StreamEntry {
  id: string;
  fields: Record<string, string> | null;
}

/** The entries of a consumer-group read or claim. */
function parseEntries(raw: unknown): StreamEntry[] {
  if (!Array.isArray(raw)) return [];
  const out: StreamEntry[] = [];
  for (const item of raw) {
    if (!Array.isArray(item) || typeof item[0] !== 'string') continue;
    const flat: unknown = item[1];
    let fields: Record<string, string> | null = null;
    if (Array.isArray(flat)) {
      fields = {};
      for (let i = 0; i + 1 < flat.length; i += 2) fields[String(flat[i])] = String(flat[i + 1]);
    }
    out.push({ id: item[0], fields });
  }
  return out;
}

/**
 * One Redis stream read through a consumer group: the only place the LogDumper talks to Redis.
 * Each stream gets its own connection (on a Cluster, its own client), since a blocking
 * XREADGROUP holds it while it waits. Every command has the bound of any Redis command of the
 * scheduler, a blocking read `blockMs` more.
 */
export class RedisStreamDriver {
  private readonly redis: Redis | Cluster;

  constructor(
    conn: BoundedRedisNode,
    private readonly key: string,
    private readonly group: string,
    private readonly consumer: string,
    blockMs = 0,
  ) {
    this.redis = boundedRedis(
      { ...conn, commandTimeoutMs: (conn.commandTimeoutMs ?? 2000) + blockMs },
      { lazyConnect: true },
    );
  }

  /** Creates the group (and the stream) if absent; a new group starts at the stream's beginning. */
  async ensureGroup(): Promise<void> {
    try {
      await this.redis.call('XGROUP', 'CREATE', this.key, this.group, '0', 'MKSTREAM');
    } catch (err) {
      if (!String((err as Error).message).startsWith('BUSYGROUP')) throw err;
    }
  }

  /** This consumer's own pending entries after `afterId` (delivered before, never acknowledged). */
  async readOwnPending(afterId: string, count: number): Promise<StreamEntry[]> {
    return this.read(afterId, count, undefined);
  }

  /** New entries, waiting up to `blockMs` for some. */
  async readNew(count: number, blockMs: number): Promise<StreamEntry[]> {
    return this.read('>', count, blockMs);
  }

  /** Takes over entries other consumers left pending longer than `minIdleMs` (they died). */
  async claimStale(
    minIdleMs: number,
    cursor: string,
    count: number,
  ): Promise<{ next: string; entries: StreamEntry[] }> {
    const raw = await this.redis.call(
      'XAUTOCLAIM',
      this.key,
      this.group,
      this.consumer,
      String(minIdleMs),
      cursor,
      'COUNT',
      String(count),
    );
    if (!Array.isArray(raw)) return { next: '0-0', entries: [] };
    return { next: String(raw[0]), entries: parseEntries(raw[1]) };
  }

  async ack(ids: readonly string[]): Promise<void> {
    if (ids.length) await this.redis.call('XACK', this.key, this.group, ...ids);
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private async read(
    id: string,
    count: number,
    blockMs: number | undefined,
  ): Promise<StreamEntry[]> {
    const args = ['GROUP', this.group, this.consumer, 'COUNT', String(count)];
    if (blockMs !== undefined) args.push('BLOCK', String(blockMs));
    const raw = await this.redis.call('XREADGROUP', ...args, 'STREAMS', this.key, id);
    // [[key, entries]] or null when nothing came.
    if (!Array.isArray(raw) || !Array.isArray(raw[0])) return [];
    return parseEntries((raw[0] as unknown[])[1]);
  }
}
