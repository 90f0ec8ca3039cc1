import { AuthConfig, TaskStoreConfig } from '@baton/task-contract';

/** Everything the template worker reads from its environment, checked once at boot. */
export interface WorkerConfig {
  host: string;
  port: number;
  /** Names this instance in logs and in the run log. */
  workerId: string;
  auth: AuthConfig;
  store: TaskStoreConfig;
  /** JSON-lines file of every run's start and end; empty string: none. */
  runLogPath: string;
  /** Where demo.rollback makes its visible change. */
  rollbackDir: string;
  /** How many first attempts demo.flaky fails by default. */
  flakyFailures: number;
  /** Scheduler base URL: registration, heartbeats and async callbacks; empty: none of them. */
  schedulerUrl: string;
  /** Report async outcomes to the scheduler (else it polls). */
  callbacks: boolean;
  /** The URL the scheduler calls this worker at; empty: the address it listens on. */
  publicUrl: string;
  /** Most tasks at once, as told to the scheduler. */
  capacity: number;
  /** Registration heartbeat period. */
  heartbeatMs: number;
  /** Told to the scheduler at registration. */
  version: string;
  bodyLimitBytes: number;
  /** Serve the contract's hot calls ahead of the framework (ContractFastPath). */
  fastPath: boolean;
}

/** A configuration problem: the process must not start. */
export class WorkerConfigError extends Error {}

function int(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new WorkerConfigError(
      `${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}

function onOff(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'on' || raw === 'true') return true;
  if (raw === 'off' || raw === 'false') return false;
  throw new WorkerConfigError(`${name} must be on or off, got ${JSON.stringify(raw)}`);
}

function authFrom(env: NodeJS.ProcessEnv): AuthConfig {
  const mode = env.BATON_AUTH_MODE ?? 'hmac';
  switch (mode) {
    case 'none':
      return { mode: 'none' };
    case 'token': {
      const token = env.BATON_AUTH_TOKEN;
      if (!token) throw new WorkerConfigError('BATON_AUTH_MODE=token needs BATON_AUTH_TOKEN');
      return { mode: 'token', token };
    }
    case 'hmac': {
      const secret = env.BATON_AUTH_SECRET;
      if (!secret)
        throw new WorkerConfigError(
          'BATON_AUTH_MODE=hmac needs BATON_AUTH_SECRET (16+ characters)',
        );
      return {
        mode: 'hmac',
        secret,
        replayWindowMs: int(env, 'BATON_AUTH_WINDOW_MS', 300_000, 1000, 3_600_000),
      };
    }
    default:
      throw new WorkerConfigError(
        `BATON_AUTH_MODE must be hmac, token or none, got ${JSON.stringify(mode)}`,
      );
  }
}

function storeFrom(env: NodeJS.ProcessEnv): TaskStoreConfig {
  const kind = env.WORKER_STORE ?? 'memory';
  // Tasks that ended (SUCCESS, FAIL, ROLLBACK, FINISH) are forgotten after this long.
  const retainEndedMs = int(env, 'WORKER_STORE_RETAIN_ENDED_MS', 3_600_000, 0, 30 * 86_400_000);
  if (kind === 'memory')
    return {
      kind,
      retainEndedMs,
      maxEnded: int(env, 'WORKER_STORE_MAX_ENDED', 100_000, 0, 100_000_000),
    };
  if (kind === 'sqlite')
    return { kind, path: env.WORKER_STORE_PATH ?? '.data/worker-tasks.sqlite', retainEndedMs };
  throw new WorkerConfigError(`WORKER_STORE must be memory or sqlite, got ${JSON.stringify(kind)}`);
}

/** Builds and validates the config; the only place that reads process.env. */
export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const port = int(env, 'WORKER_PORT', 3100, 0, 65535);
  return {
    host: env.WORKER_HOST ?? '127.0.0.1',
    port,
    workerId: env.WORKER_ID ?? `worker-${port}`,
    auth: authFrom(env),
    store: storeFrom(env),
    runLogPath: env.WORKER_RUN_LOG ?? '',
    rollbackDir: env.WORKER_ROLLBACK_DIR ?? '.data/rollback',
    flakyFailures: int(env, 'WORKER_FLAKY_FAILURES', 2, 0, 100),
    schedulerUrl: env.BATON_SCHEDULER_URL ?? '',
    publicUrl: env.WORKER_PUBLIC_URL ?? '',
    callbacks: env.WORKER_CALLBACKS !== 'off',
    capacity: int(env, 'WORKER_CAPACITY', 64, 1, 100_000),
    heartbeatMs: int(env, 'WORKER_HEARTBEAT_MS', 2000, 50, 600_000),
    version: env.WORKER_VERSION ?? '0.1.0',
    bodyLimitBytes: int(env, 'WORKER_BODY_LIMIT', 1_048_576, 1024, 64 * 1_048_576),
    fastPath: onOff(env, 'WORKER_FAST_PATH', true),
  };
}
