import { hostname } from 'node:os';
import { AuthConfig, DEFAULT_JSON_SHAPE, JsonShapeLimits } from '@baton/task-contract';
import { LockConfig } from '@baton/locks';
import { BackendCheckConfig, DatabaseConfig, backendCheck, database } from './database.config';
import { DEFAULT_QUEUE_PREFIX, QueueConfig } from './queue.config';
import { RedisConnection, redisConnection } from './redis.config';
import { OutgoingConfig, outgoingConfig } from './outgoing.config';
import { ApiAuthConfig, apiAuthConfig } from './api-auth.config';
import { LogConfig, logConfig } from './log.config';
import { Env, SchedulerConfigError, int, oneOf, required, semver } from './env-values';

export { SchedulerConfigError };

/** Everything the scheduler reads from its environment, checked once at boot. */
export interface SchedulerConfig {
  host: string;
  port: number;
  /** Names this instance in claims, logs and the lifecycle log. */
  instanceId: string;
  log: LogConfig;
  database: DatabaseConfig & { migrate: boolean };
  /** How often the database and queue are checked, and after how long one counts as down. */
  backendCheck: BackendCheckConfig;
  queue: QueueConfig;
  locks: LockConfig;
  /** How the scheduler signs calls to workers and checks callbacks from them. */
  auth: AuthConfig;
  runner: {
    /** Tasks driven at once by this instance. */
    concurrency: number;
    /** Queue claim lease; a runner that dies loses its claims after this. */
    claimLeaseMs: number;
    /** Per-call timeout towards workers (run of a sync task uses its deadline instead). */
    callTimeoutMs: number;
    /** Percentage of `concurrency` retries may use (the retry lane); at least one slot. */
    retrySharePercent: number;
    /**
     * On SIGTERM, how long until the process exits whatever its backends do; the drives under
     * way may go on for half of it before their claims are handed back.
     */
    shutdownGraceMs: number;
  };
  checker: {
    intervalMs: number;
    /** How often RUNNING async tasks are polled for status and heartbeat. */
    pollIntervalMs: number;
  };
  dispatcher: {
    intervalMs: number;
    batch: number;
    /** Tasks due within this are queued ahead, at their due time, and the runner wakes for them. */
    lookaheadMs: number;
    /** Default starts per second per tenant over the fleet (the API may set others); tenants not listed get `tenantRateDefault`. */
    tenantRates: Record<string, number>;
    /** 0: no limit. */
    tenantRateDefault: number;
    /** A tenant's fair share of the fleet's starts is at least this many a second (FairShare). */
    fairShareMin: number;
  };
  workers: {
    /** A worker that has not heartbeated for this long is not picked. */
    staleAfterMs: number;
    /** The oldest worker contract a registration may speak (older ones are refused). */
    minContractVersion: string;
    /** Consecutive failures that blacklist a worker, and for how long. */
    blacklistAfter: number;
    blacklistMs: number;
    /** How long a silent worker of an attempt given up is told to drop it (not once it deregistered). */
    dropGiveUpMs: number;
  };
  producer: {
    /** standby: one elected leader fires every timer; distributed: timers hashed over live members. */
    mode: 'standby' | 'distributed';
    /** TTL of the leader / member lease in the lock backend: a dead owner is replaced after it. */
    leaseMs: number;
    /** How often a standby tries for the lead, and members are probed. */
    probeMs: number;
    /** How often the timers are read again (changes made through another instance). */
    refreshMs: number;
    /** Most slots one timer fires in one pass (a long outage under fire_all catches up in passes). */
    maxCatchUp: number;
    /** An `allow` timer's fire is written this long before its slot (start_time = slot); 0: at it. */
    leadMs: number;
  };
  bodyLimitBytes: number;
  /** How deep and wide a JSON body may be; checked on the bytes before parsing (400 past it). */
  jsonShape: JsonShapeLimits;
  outgoing: OutgoingConfig;
  apiAuth: ApiAuthConfig;
  api: {
    /** Public API requests answered at once; more get 503 with Retry-After straight away. */
    maxInFlight: number;
    /** Mean event-loop delay past which the API sheds new requests and the runner claims nothing. */
    overloadLagMs: number;
    /** Public API requests per second per API key (per address without one); 0: no limit. */
    rateLimitPerSec: number;
    /** How often the lifecycle log is read for live views (`/v1/task-changes/stream`) while someone watches. */
    streamPollMs: number;
    /** Live-view connections one instance keeps; more get 503 (and poll instead). */
    streamMaxWatchers: number;
    /** A live-view connection is ended after this long (its client reconnects, maybe elsewhere). */
    streamMaxSeconds: number;
  };
  logdumper: LogDumperConfig;
  /** What workers send of their own log, per attempt of a task (oldest lines dropped past it). */
  attemptLogs: {
    maxLines: number;
    maxBytes: number;
  };
  retention: {
    /** Days a FINISH task is kept when its type says nothing; 0: kept forever. */
    defaultDays: number;
    /** How often the purge looks for finished tasks past their age. */
    intervalMs: number;
    /** Tasks deleted per transaction (each with its events, attempts, labels, idempotency record). */
    batch: number;
    /** Pause between two batches (at least twice what the batch took; 0: none), so a purge never holds locks or the pool for long. */
    pauseMs: number;
    /** When set, what is purged is first appended here as JSON lines (a file per day). */
    exportDir: string | null;
  };
}

/** LogDumper sources read by this instance (HTTP ingest needs no configuration). */
export interface LogDumperConfig {
  /** Tailed files: `BATON_LOG_FILES=name=/path/app.log,...`; one lease-holding reader per file. */
  files: { name: string; path: string }[];
  /** Redis streams: `BATON_LOG_STREAMS=name=streamKey,...`, read in a consumer group. */
  streams: { name: string; key: string }[];
  /** Where the streams live (the BATON_REDIS_* server, or the Cluster). */
  redis: RedisConnection;
  /** Consumer group of every stream source; the consumer name is the instance id. */
  streamGroup: string;
  /** Pause between passes over a file that had nothing new. */
  pollIntervalMs: number;
  /** Lines (file) or entries (stream) processed before the position is stored. */
  batch: number;
  /** TTL of a file's reader lease; a crashed reader's file is taken over after it. */
  fileLeaseMs: number;
  /** A pending stream entry idle this long belongs to a dead consumer and is claimed. */
  streamClaimIdleMs: number;
  /** XREADGROUP BLOCK: how long one read waits for new entries. */
  streamBlockMs: number;
}

function queue(env: Env): QueueConfig {
  const driver = oneOf(env, 'BATON_QUEUE', ['memory', 'redis'] as const, 'memory');
  if (driver === 'memory') return { driver };
  return {
    driver,
    redis: redisConnection(env),
    prefix: env.BATON_QUEUE_PREFIX ?? DEFAULT_QUEUE_PREFIX,
    shards: int(env, 'BATON_QUEUE_SHARDS', 4, 1, 1024),
  };
}

function locks(env: Env): LockConfig {
  const driver = oneOf(
    env,
    'BATON_LOCK',
    ['local', 'mysql', 'redis', 'zookeeper', 'etcd'] as const,
    'local',
  );
  switch (driver) {
    case 'local':
      return { driver };
    case 'mysql':
      return {
        driver,
        mysql: {
          host: env.BATON_MYSQL_HOST ?? '127.0.0.1',
          port: int(env, 'BATON_MYSQL_PORT', 3306, 1, 65535),
          user: env.BATON_MYSQL_USER ?? 'root',
          password: env.BATON_MYSQL_PASSWORD ?? '',
          database: required(env, 'BATON_MYSQL_DATABASE', 'when BATON_LOCK=mysql'),
        },
      };
    case 'redis':
      return {
        driver,
        redis: { nodes: [redisConnection(env)], keyPrefix: env.BATON_LOCK_PREFIX ?? 'baton:lock:' },
      };
    case 'zookeeper':
      return {
        driver,
        zookeeper: {
          connectionString: required(
            env,
            'BATON_ZOOKEEPER',
            'when BATON_LOCK=zookeeper (host:port[,host:port])',
          ),
          rootPath: env.BATON_ZOOKEEPER_ROOT ?? '/baton/locks',
          sessionTimeoutMs: int(env, 'BATON_ZOOKEEPER_SESSION_MS', 4000, 500, 600_000),
          // A connect begun while the server was silent waits this long even after it comes
          // back (the request was lost): short, so readiness returns within about this long.
          connectTimeoutMs: int(env, 'BATON_ZOOKEEPER_CONNECT_MS', 2000, 100, 600_000),
        },
      };
    case 'etcd':
      return {
        driver,
        etcd: {
          hosts: required(env, 'BATON_ETCD', 'when BATON_LOCK=etcd (comma-separated URLs)').split(
            ',',
          ),
          // Several Baton clusters (or test runs) on one etcd each need keys of their own.
          keyPrefix: env.BATON_LOCK_PREFIX ?? 'baton/lock/',
        },
      };
  }
}

/** `BATON_TENANT_RATE_LIMITS=team-a=50,team-b=5`: starts per second per tenant. */
function tenantRates(env: Env): Record<string, number> {
  const raw = env.BATON_TENANT_RATE_LIMITS ?? '';
  const out: Record<string, number> = {};
  for (const part of raw
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([a-z0-9][a-z0-9_-]{0,99})=(\d{1,7})$/.exec(part);
    if (!m || Number(m[2]) < 1)
      throw new SchedulerConfigError(
        `BATON_TENANT_RATE_LIMITS: ${JSON.stringify(part)} is not tenant=starts-per-second`,
      );
    out[m[1]] = Number(m[2]);
  }
  return out;
}

function auth(env: Env): AuthConfig {
  const mode = oneOf(env, 'BATON_AUTH_MODE', ['hmac', 'token', 'none'] as const, 'hmac');
  if (mode === 'none') return { mode };
  if (mode === 'token')
    return { mode, token: required(env, 'BATON_AUTH_TOKEN', 'when BATON_AUTH_MODE=token') };
  const secret = required(
    env,
    'BATON_AUTH_SECRET',
    'when BATON_AUTH_MODE=hmac (16+ characters, shared with the workers)',
  );
  if (secret.length < 16)
    throw new SchedulerConfigError('BATON_AUTH_SECRET must be at least 16 characters');
  return {
    mode,
    secret,
    replayWindowMs: int(env, 'BATON_AUTH_WINDOW_MS', 300_000, 1000, 3_600_000),
  };
}

const SOURCE_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** `name=value,...` pairs of a LogDumper source list; names are unique. */
function namedList(env: Env, name: string, what: string): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  for (const part of (env[name] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const eq = part.indexOf('=');
    const key = eq > 0 ? part.slice(0, eq) : '';
    const value = eq > 0 ? part.slice(eq + 1) : '';
    if (!SOURCE_NAME.test(key) || value === '' || out.some((o) => o.name === key)) {
      throw new SchedulerConfigError(
        `${name}: ${JSON.stringify(part)} is not a unique name=${what} (name: 1-64 of [A-Za-z0-9._-])`,
      );
    }
    out.push({ name: key, value });
  }
  return out;
}

function logdumper(env: Env): LogDumperConfig {
  return {
    files: namedList(env, 'BATON_LOG_FILES', 'path').map((f) => ({ name: f.name, path: f.value })),
    streams: namedList(env, 'BATON_LOG_STREAMS', 'streamKey').map((s) => ({
      name: s.name,
      key: s.value,
    })),
    redis: redisConnection(env),
    streamGroup: env.BATON_LOG_STREAM_GROUP ?? 'baton-logdumper',
    pollIntervalMs: int(env, 'BATON_LOG_POLL_MS', 500, 10, 60_000),
    batch: int(env, 'BATON_LOG_BATCH', 200, 1, 10_000),
    fileLeaseMs: int(env, 'BATON_LOG_FILE_LEASE_MS', 10_000, 500, 600_000),
    streamClaimIdleMs: int(env, 'BATON_LOG_STREAM_CLAIM_IDLE_MS', 30_000, 100, 3_600_000),
    streamBlockMs: int(env, 'BATON_LOG_STREAM_BLOCK_MS', 1000, 10, 60_000),
  };
}

/** Builds and validates the config; the only place in the scheduler that reads process.env. */
export function loadSchedulerConfig(env: Env = process.env): SchedulerConfig {
  const port = int(env, 'SCHEDULER_PORT', 3000, 0, 65535);
  const config: SchedulerConfig = {
    host: env.SCHEDULER_HOST ?? '127.0.0.1',
    port,
    instanceId: env.BATON_INSTANCE_ID ?? `${hostname()}-${process.pid}`,
    log: logConfig(env),
    database: database(env),
    backendCheck: backendCheck(env),
    queue: queue(env),
    locks: locks(env),
    auth: auth(env),
    runner: {
      concurrency: int(env, 'BATON_RUNNER_CONCURRENCY', 256, 1, 10_000),
      claimLeaseMs: int(env, 'BATON_CLAIM_LEASE_MS', 30_000, 1000, 3_600_000),
      callTimeoutMs: int(env, 'BATON_CALL_TIMEOUT_MS', 10_000, 100, 600_000),
      retrySharePercent: int(env, 'BATON_RETRY_LANE_PERCENT', 25, 1, 100),
      shutdownGraceMs: int(env, 'BATON_SHUTDOWN_GRACE_MS', 20_000, 1000, 600_000),
    },
    checker: {
      intervalMs: int(env, 'BATON_CHECKER_INTERVAL_MS', 1000, 10, 60_000),
      pollIntervalMs: int(env, 'BATON_POLL_INTERVAL_MS', 2000, 10, 600_000),
    },
    dispatcher: {
      intervalMs: int(env, 'BATON_DISPATCH_INTERVAL_MS', 200, 5, 60_000),
      batch: int(env, 'BATON_DISPATCH_BATCH', 1000, 1, 100_000),
      lookaheadMs: int(env, 'BATON_DISPATCH_LOOKAHEAD_MS', 1000, 0, 60_000),
      tenantRates: tenantRates(env),
      tenantRateDefault: int(env, 'BATON_TENANT_RATE_LIMIT', 0, 0, 1_000_000),
      fairShareMin: int(env, 'BATON_FAIR_SHARE_MIN', 50, 1, 1_000_000),
    },
    workers: {
      staleAfterMs: int(env, 'BATON_WORKER_STALE_MS', 30_000, 100, 3_600_000),
      // 1.1.0: a 1.0.0 worker cannot say a run died with its process (`execution_lost`).
      minContractVersion: semver(env, 'BATON_MIN_WORKER_CONTRACT', '1.1.0'),
      blacklistAfter: int(env, 'BATON_WORKER_BLACKLIST_AFTER', 3, 1, 1000),
      blacklistMs: int(env, 'BATON_WORKER_BLACKLIST_MS', 30_000, 100, 3_600_000),
      dropGiveUpMs: int(env, 'BATON_DROP_GIVE_UP_MS', 3_600_000, 1000, 7 * 86_400_000),
    },
    producer: {
      mode: oneOf(env, 'BATON_PRODUCER_MODE', ['standby', 'distributed'] as const, 'standby'),
      leaseMs: int(env, 'BATON_PRODUCER_LEASE_MS', 5000, 500, 600_000),
      probeMs: 0,
      refreshMs: int(env, 'BATON_PRODUCER_REFRESH_MS', 1000, 10, 600_000),
      maxCatchUp: int(env, 'BATON_PRODUCER_MAX_CATCH_UP', 1000, 1, 100_000),
      leadMs: int(env, 'BATON_PRODUCER_LEAD_MS', 1000, 0, 60_000),
    },
    bodyLimitBytes: int(env, 'BATON_BODY_LIMIT', 1_048_576, 1024, 64 * 1_048_576),
    jsonShape: {
      maxDepth: int(env, 'BATON_JSON_MAX_DEPTH', DEFAULT_JSON_SHAPE.maxDepth, 4, 1000),
      maxElements: int(env, 'BATON_JSON_MAX_ELEMENTS', DEFAULT_JSON_SHAPE.maxElements, 100, 1e7),
    },
    api: {
      maxInFlight: int(env, 'BATON_API_MAX_IN_FLIGHT', 512, 1, 100_000),
      overloadLagMs: int(env, 'BATON_OVERLOAD_LAG_MS', 1000, 10, 600_000),
      rateLimitPerSec: int(env, 'BATON_API_RATE_LIMIT', 1000, 0, 1_000_000),
      streamPollMs: int(env, 'BATON_STREAM_POLL_MS', 500, 50, 60_000),
      streamMaxWatchers: int(env, 'BATON_STREAM_MAX_WATCHERS', 500, 0, 100_000),
      streamMaxSeconds: int(env, 'BATON_STREAM_MAX_SECONDS', 900, 1, 86_400),
    },
    logdumper: logdumper(env),
    outgoing: outgoingConfig(env),
    apiAuth: apiAuthConfig(env),
    attemptLogs: {
      maxLines: int(env, 'BATON_ATTEMPT_LOG_MAX_LINES', 10_000, 10, 1_000_000),
      maxBytes: int(env, 'BATON_ATTEMPT_LOG_MAX_BYTES', 1_048_576, 1024, 1_073_741_824),
    },
    retention: {
      defaultDays: int(env, 'BATON_RETENTION_DAYS', 30, 0, 36_500),
      intervalMs: int(env, 'BATON_RETENTION_INTERVAL_MS', 60_000, 100, 86_400_000),
      batch: int(env, 'BATON_RETENTION_BATCH', 500, 1, 10_000),
      pauseMs: int(env, 'BATON_RETENTION_PAUSE_MS', 200, 0, 60_000),
      exportDir: env.BATON_RETENTION_EXPORT_DIR || null,
    },
  };
  config.producer.probeMs = int(
    env,
    'BATON_PRODUCER_PROBE_MS',
    Math.max(100, Math.floor(config.producer.leaseMs / 3)),
    10,
    600_000,
  );
  return config;
}

export const SCHEDULER_CONFIG = Symbol('SCHEDULER_CONFIG');
