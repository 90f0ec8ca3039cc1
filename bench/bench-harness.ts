/**
 * The set-up the benchmarks that set Baton against BullMQ share (bench/scheduler.bench.ts,
 * bench/topology.bench.ts): integer knobs, the clean-up list and the wrapper that runs a bench
 * under its time limit, the databases and Redis keys of a run, the scheduler as they start it,
 * calls to it, the IPC of the BullMQ pipeline, and CPU snapshots of the processes under test.
 */
import { cpus, freemem, loadavg } from 'node:os';
import Redis from 'ioredis';
import { Pool, createPool } from 'mysql2/promise';
import { CreateTask, SchedulerClient } from '@baton/scheduler-client';
import { createDataSource } from '../apps/scheduler/src/database';
import { ENTITIES } from '../apps/scheduler/src/entities';
import { loadSchedulerConfig } from '../apps/scheduler/src/config';
import {
  BENCH_ADMIN_KEY,
  BenchError,
  Child,
  cpuMs,
  machineCpuMs,
  SERVICE_NODE_ARGS,
  sleep,
  startChild,
} from './bench-support';
import type { PipelineCommand, PipelineReply } from './bullmq-pipeline';

const env = process.env;

export const BENCH_MYSQL = { host: '127.0.0.1', port: 3306, user: 'root', password: '' };

/** An integer knob from the environment: `fallback` when unset, at least `min`. */
export function envInt(name: string, fallback: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new BenchError(`${name} must be an integer >= ${min}`);
  return n;
}

// ---- clean-up and the time limit -------------------------------------------------------------

const cleanups: { what: string; run: () => Promise<void> }[] = [];
let cleaning: Promise<void> | undefined;

/** Undoes everything the run made, newest first; every step is tried. */
export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const c of cleanups.reverse()) {
      try {
        await Promise.race([
          c.run(),
          sleep(20_000).then(() => {
            throw new BenchError('took over 20 s');
          }),
        ]);
      } catch (err) {
        console.error(`cleanup: ${c.what}: ${(err as Error).message}`);
      }
    }
  })();
  return cleaning;
}

export function onCleanup(what: string, run: () => Promise<void>): void {
  cleanups.push({ what, run });
}

/** The instant a bench must be done by, and a check made before each step. */
export interface Deadline {
  at: number;
  check(what: string): void;
}

export function deadlineIn(limitMs: number): Deadline {
  const at = Date.now() + limitMs;
  return {
    at,
    check(what: string): void {
      if (Date.now() > at)
        throw new BenchError(`time limit of ${limitMs} ms reached before ${what}`);
    },
  };
}

/** The machine's cores and load averages (1, 5, 15 min): printed before and after every bench. */
export function machineLoad(): string {
  return `${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}, ${Math.round(freemem() / 2 ** 20)} MiB free`;
}

/**
 * Runs a bench's `main`, then the clean-up, whatever happened: on failure, on SIGINT/SIGTERM, and
 * when the time limit (plus a minute for the clean-up) passes.
 */
export function runBench(main: () => Promise<void>, timeLimitMs: number): void {
  const watchdog = setTimeout(() => {
    console.error(`time limit of ${timeLimitMs} ms (+60 s) exceeded: aborting`);
    void cleanup().finally(() => process.exit(2));
  }, timeLimitMs + 60_000);
  watchdog.unref();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`${signal}: cleaning up`);
      void cleanup().finally(() => process.exit(130));
    });
  }
  console.log(`machine before: ${machineLoad()}`);
  main()
    .then(() => console.log(`machine after: ${machineLoad()}`))
    .catch((err: unknown) => {
      console.error(`benchmark failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exitCode = 1;
    })
    .finally(() =>
      cleanup().finally(() => {
        clearTimeout(watchdog);
        // Keep-alive sockets of the HTTP client must not hold the process open.
        process.exit();
      }),
    );
}

// ---- databases, Redis, the scheduler ----------------------------------------------------------

/**
 * A database dropped at clean-up. `migrate`: made with the scheduler's schema by the scheduler's
 * own migrations (for the BullMQ pipeline, which writes that schema); otherwise left empty for
 * the scheduler to migrate.
 */
export async function createBenchDatabase(
  admin: Pool,
  name: string,
  migrate: boolean,
): Promise<void> {
  await admin.query(`CREATE DATABASE ${name}`);
  onCleanup(`drop database ${name}`, async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  });
  if (!migrate) return;
  const ds = createDataSource(
    { type: 'mysql', ...BENCH_MYSQL, database: name, poolSize: 2 },
    ENTITIES,
  );
  await ds.initialize();
  try {
    await ds.runMigrations();
  } finally {
    await ds.destroy();
  }
}

/** Deletes every Redis key holding `:<prefix>:` (the queue's, the locks', BullMQ's). */
export async function deleteRedisKeys(prefix: string): Promise<void> {
  const redis = new Redis({ host: '127.0.0.1', port: 6379, maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    let rounds = 0;
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `*${prefix}:*`, 'COUNT', 1000);
      if (keys.length) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0' && ++rounds < 100_000);
  } finally {
    redis.disconnect();
  }
}

/**
 * The scheduler's settings for a bench: the shipped defaults, as users run them. Only the API's
 * keys are switched on (every create carries the bench's key, as in production). BENCH_CONCURRENCY
 * and BENCH_POOL, when set, apply to Baton as to the BullMQ peers; an exported BATON_* of the same
 * name wins over everything.
 */
export function schedulerSettings(): Record<string, string> {
  const out: Record<string, string> = { BATON_API_AUTH: 'keys' };
  if (env.BENCH_CONCURRENCY) out.BATON_RUNNER_CONCURRENCY = env.BENCH_CONCURRENCY;
  if (env.BENCH_POOL) out.BATON_MYSQL_POOL = env.BENCH_POOL;
  for (const [k, v] of Object.entries(env))
    if (k.startsWith('BATON_') && v !== undefined) out[k] = v;
  return out;
}

/** The throughput knobs a bench ran with, as the scheduler reads them (defaults included). */
export function knobs(settings: Record<string, string>): string {
  const config = loadSchedulerConfig({
    BATON_AUTH_SECRET: 'bench-settings-only-0123456789',
    BATON_DB: 'mysql',
    BATON_MYSQL_DATABASE: 'bench',
    BATON_QUEUE: 'redis',
    ...settings,
  });
  const changed = Object.keys(settings).filter((k) => k !== 'BATON_API_AUTH');
  return (
    `runner concurrency ${config.runner.concurrency}, queue shards ${config.queue.driver === 'redis' ? config.queue.shards : '-'}, ` +
    `dispatch every ${config.dispatcher.intervalMs} ms (batch ${config.dispatcher.batch}), ` +
    `MySQL pool ${config.database.type === 'mysql' ? config.database.poolSize : '-'}; ` +
    (changed.length ? `set here: ${changed.join(' ')}` : 'all shipped defaults')
  );
}

/** The scheduler on MariaDB (`database`, migrated at start), Redis queue and locks, HMAC. */
export function startBenchScheduler(opts: {
  runId: string;
  database: string;
  keyPrefix: string;
  secret: string;
  settings: Record<string, string>;
  extraNodeArgs?: string[];
}): Promise<Child> {
  return startChild(
    'scheduler',
    'dist/apps/scheduler/src/main.js',
    {
      SCHEDULER_PORT: '0',
      BATON_INSTANCE_ID: `bench-${opts.runId}`,
      BATON_DB: 'mysql',
      BATON_MYSQL_DATABASE: opts.database,
      BATON_DB_MIGRATE: 'true',
      BATON_QUEUE: 'redis',
      BATON_QUEUE_PREFIX: `${opts.keyPrefix}:q`,
      BATON_LOCK: 'redis',
      BATON_LOCK_PREFIX: `${opts.keyPrefix}:lock:`,
      BATON_AUTH_MODE: 'hmac',
      BATON_AUTH_SECRET: opts.secret,
      BATON_ADMIN_KEY: BENCH_ADMIN_KEY,
      ...opts.settings,
    },
    { nodeArgs: [...SERVICE_NODE_ARGS, ...(opts.extraNodeArgs ?? [])] },
  );
}

/** The bench submits work the way a team would: through the scheduler client. */
export function benchClient(base: string): SchedulerClient {
  return new SchedulerClient({ urls: [base], timeoutMs: 60_000, apiKey: BENCH_ADMIN_KEY });
}

export async function waitForHealthyWorker(scheduler: string, workerId: string): Promise<void> {
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    const workers = await benchClient(scheduler).listWorkers();
    if (workers.some((w) => w.worker_id === workerId && w.health === 'healthy')) return;
    await sleep(100);
  }
  throw new BenchError(`worker ${workerId} not healthy on the scheduler within 30 s`);
}

/** `tasks` sync `demo.echo` creates named `<prefix><i>`, in batches of at most `batch`. */
export function taskBatches(
  prefix: string,
  tasks: number,
  batch: number,
  params: Record<string, unknown> = {},
): CreateTask[][] {
  const out: CreateTask[][] = [];
  for (let i = 0; i < tasks; i += batch) {
    out.push(
      Array.from({ length: Math.min(batch, tasks - i) }, (_, k) => ({
        create_info: { task_type: 'demo.echo', task_name: `${prefix}${i + k}` },
        params: { i: i + k, ...params },
      })),
    );
  }
  return out;
}

// ---- the BullMQ pipeline's IPC -----------------------------------------------------------------

/**
 * Sends a command to the BullMQ pipeline (bench/bullmq-pipeline.ts) and resolves with its reply
 * of type `want`; rejects on an `error` reply or when the pipeline exits.
 */
export function askPipeline<T extends PipelineReply['type']>(
  pipeline: Child,
  cmd: PipelineCommand,
  want: T,
): Promise<Extract<PipelineReply, { type: T }>> {
  const reply = new Promise<Extract<PipelineReply, { type: T }>>((resolve, reject) => {
    const onExit = (): void =>
      reject(new BenchError(`bullmq pipeline exited:\n${pipeline.output()}`));
    const onMessage = (m: PipelineReply): void => {
      if (m.type === want) resolve(m as Extract<PipelineReply, { type: T }>);
      else if (m.type === 'error') reject(new BenchError(`bullmq pipeline: ${m.message}`));
      else return;
      pipeline.proc.off('message', onMessage);
      pipeline.proc.off('exit', onExit);
    };
    pipeline.proc.on('message', onMessage);
    pipeline.proc.once('exit', onExit);
  });
  pipeline.proc.send(cmd);
  return reply;
}

// ---- CPU ----------------------------------------------------------------------------------------

/** The processes whose CPU a run counts: the apps by name, and the MariaDB and Redis servers. */
export interface Probe {
  apps: Record<string, number | undefined>;
  mariadb: number | undefined;
  redis: number | undefined;
}

/** CPU ms so far of each process of `p`, this bench's own (`bench`) and the machine's. */
export function cpuSnapshot(p: Probe): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(p.apps)) out[name] = cpuMs(pid);
  out.mariadb = cpuMs(p.mariadb);
  out.redis = cpuMs(p.redis);
  const usage = process.cpuUsage();
  out.bench = (usage.user + usage.system) / 1000;
  const machine = machineCpuMs();
  out.machineBusy = machine.busy;
  out.machineTotal = machine.total;
  return out;
}

/**
 * The BullMQ pipeline process (bench/bullmq-pipeline.ts) over its own database, calling the same
 * worker, with a small pool of this process's own to read its rows; both are closed at cleanup.
 */
export async function startBullPipeline(opts: {
  database: string;
  keyPrefix: string;
  workerUrl: string;
  secret: string;
  concurrency: number;
  pool: number;
  batch: number;
  inFlight: number;
  /** `batched`: the peer that writes a group of jobs' rows as one statement per kind. */
  writes?: 'each' | 'batched';
}): Promise<{ db: Pool; pipeline: Child }> {
  const db = createPool({ ...BENCH_MYSQL, database: opts.database, connectionLimit: 2 });
  onCleanup('close bullmq pool', () => db.end());
  const pipeline = await startChild(
    'bullmq pipeline',
    'dist/bench/bullmq-pipeline.js',
    {
      BENCH_MYSQL_DATABASE: opts.database,
      BENCH_BULL_PREFIX: `${opts.keyPrefix}:bull`,
      BENCH_WORKER_URL: opts.workerUrl,
      BATON_AUTH_SECRET: opts.secret,
      BENCH_CONCURRENCY: String(opts.concurrency),
      BENCH_POOL: String(opts.pool),
      BENCH_BATCH: String(opts.batch),
      BENCH_CREATE_IN_FLIGHT: String(opts.inFlight),
      BENCH_BULL_WRITES: opts.writes ?? 'each',
    },
    { ipc: true, nodeArgs: SERVICE_NODE_ARGS },
  );
  onCleanup('stop bullmq pipeline', () => pipeline.stop());
  return { db, pipeline };
}
