import { LockDriverName } from './lock-provider.interface';

/** Settings of the `local` driver (in-process, the embedded default). */
export interface LocalLockConfig {
  /** Poll interval cap while waiting; waiters are also woken directly on release. */
  maxPollMs?: number;
}

/** Settings of the `mysql` driver (works on MariaDB). */
export interface MysqlLockConfig {
  host: string;
  port?: number;
  user: string;
  password?: string;
  database: string;
  /** Lease table name; created if absent. Defaults to `baton_lock_lease`. */
  table?: string;
  /** Connection pool size. Defaults to 4. */
  poolSize?: number;
  /** Backoff polling cap while waiting (MySQL has no notifications). Defaults to 200 ms. */
  maxPollMs?: number;
}

/** One independent Redis server, or one whole Redis Cluster: a member of the quorum. */
export interface RedisNodeConfig {
  host: string;
  port?: number;
  password?: string;
  db?: number;
  /** A command not answered within this fails; default 2000 ms. */
  commandTimeoutMs?: number;
  /**
   * This member is a Redis Cluster, reached through these of its nodes (`host`, `port` and `db`
   * are then not used): every key and its fence live in one slot, on the master serving it. The
   * Cluster replicates asynchronously, so a lock or fence written just before its master died
   * may be missing on the replica that takes over.
   */
  cluster?: readonly { host: string; port: number }[];
}

/**
 * Settings of the `redis` driver: the Redlock algorithm over one or several independent servers
 * (or Clusters, each one member).
 */
export interface RedisLockConfig {
  nodes: readonly RedisNodeConfig[];
  /** Prefix of every lock, fence and channel key. Defaults to `baton:lock:`. */
  keyPrefix?: string;
  /** Clock drift factor for a lock's validity time (Redlock's). Defaults to 0.01. */
  driftFactor?: number;
  /** Polling cap for keys freed by expiry (releases are announced by pub/sub). Defaults to 200 ms. */
  maxPollMs?: number;
}

/** Settings of the `zookeeper` driver. */
export interface ZookeeperLockConfig {
  /** `host:port[,host:port]`, optionally with a chroot. */
  connectionString: string;
  /** Parent path of lock nodes. Defaults to `/baton/locks`. */
  rootPath?: string;
  /** ZooKeeper session timeout; a paused holder loses its znodes after it. Defaults to 4000 ms. */
  sessionTimeoutMs?: number;
  /** How long to wait for the first connection. Defaults to 5000 ms. */
  connectTimeoutMs?: number;
  /**
   * Deadline of each ZooKeeper call; a call without a reply by then is treated as a dead
   * connection (the client library has no read timeout of its own). Defaults to the session timeout.
   */
  callTimeoutMs?: number;
}

/** Settings of the `etcd` driver. */
export interface EtcdLockConfig {
  /** Client URLs, e.g. `http://127.0.0.1:2379`. */
  hosts: readonly string[];
  /** Prefix of lock keys. Defaults to `baton/lock/`. */
  keyPrefix?: string;
  /** Per-call deadline. Defaults to 5000 ms. */
  callTimeoutMs?: number;
}

/** The typed lock configuration; only the chosen driver's section is required. */
export interface LockConfig {
  driver: LockDriverName;
  local?: LocalLockConfig;
  mysql?: MysqlLockConfig;
  redis?: RedisLockConfig;
  zookeeper?: ZookeeperLockConfig;
  etcd?: EtcdLockConfig;
}
