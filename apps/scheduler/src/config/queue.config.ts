/** Where the Redis queue driver connects when it opens (and owns) its client. */
export interface RedisQueueConnection {
  host: string;
  port: number;
  db?: number;
  password?: string;
  /** A command not answered within this fails (BATON_REDIS_COMMAND_TIMEOUT_MS); default 2000. */
  commandTimeoutMs?: number;
}

/** The queue drivers the factory knows. */
export type QueueDriverName = 'memory' | 'redis';

/** The embedded default: in-process, rebuilt from the database at start. */
export interface MemoryQueueConfig {
  driver: 'memory';
}

/** Production: Redis (standalone here; keys are hash-tagged per shard for a Cluster). */
export interface RedisQueueConfig {
  driver: 'redis';
  redis: RedisQueueConnection;
  /** Key prefix; default `baton:queue`. */
  prefix?: string;
  /** Shards to spread keys over a Redis Cluster; default 4. */
  shards?: number;
}

/** The queue section of the scheduler's typed config, validated at boot. */
export type QueueConfig = MemoryQueueConfig | RedisQueueConfig;

/** The default key prefix of the Redis driver. */
export const DEFAULT_QUEUE_PREFIX = 'baton:queue';
