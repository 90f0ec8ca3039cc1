/** Where the Redis queue driver connects when it opens (and owns) its client. */
export interface RedisQueueConnection {
  host: string;
  port: number;
  db?: number;
  password?: string;
  /** A command not answered within this fails (BATON_REDIS_COMMAND_TIMEOUT_MS); default 2000. */
  commandTimeoutMs?: number;
  /**
   * A Redis Cluster instead of the one server (BATON_REDIS_CLUSTER_NODES): a few of its nodes, from
   * which the client learns the rest. `host` and `port` then name its first node, `db` is 0.
   */
  cluster?: readonly { host: string; port: number }[];
}

/** The queue drivers the factory knows. */
export type QueueDriverName = 'memory' | 'redis';

/** The embedded default: in-process, rebuilt from the database at start. */
export interface MemoryQueueConfig {
  driver: 'memory';
}

/** Production: Redis, standalone or a Cluster (keys are hash-tagged: one slot per shard). */
export interface RedisQueueConfig {
  driver: 'redis';
  redis: RedisQueueConnection;
  /** Key prefix; default `baton:queue`. */
  prefix?: string;
  /**
   * Shards of each lane; default 4. A shard is one slot, so on a Cluster the shards are what
   * spreads a lane over the masters; on a standalone server one script claims over all of them.
   */
  shards?: number;
}

/** The queue section of the scheduler's typed config, validated at boot. */
export type QueueConfig = MemoryQueueConfig | RedisQueueConfig;

/** The default key prefix of the Redis driver. */
export const DEFAULT_QUEUE_PREFIX = 'baton:queue';
