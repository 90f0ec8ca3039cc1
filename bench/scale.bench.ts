/**
 * Scale benchmark (`npm run bench:scale`; not part of the test suite): what waiting work costs.
 *
 * One scheduler (MariaDB, Redis queue and locks, HMAC) and one template worker, as real processes.
 * Delayed tasks (start_time two hours ahead) are added in steps up to each N of BENCH_SCALE_N
 * (default `10000,100000`; `1000000` for the full run), and after each step BENCH_IMMEDIATE
 * immediate `demo.echo` tasks (default 20 000) run with them waiting. The first row is the same
 * immediate run with nothing waiting (N = 0). Each row prints: the creation rate of the delayed
 * tasks, immediate tasks/s (first create to last finished_at), scheduler CPU ms per immediate
 * task (/proc), the scheduler's RSS after the run and again after BENCH_QUIET_MS (default 15 s)
 * idle (what the heap keeps once V8 has had time to give back what the run used: the figure
 * after the run alone swung 270-399 MB between identical runs), Redis memory and the table size.
 *
 * With BENCH_PURGE (e.g. 1000000): that many finished tasks 40 days old, and immediate tasks/s
 * with retention off, then while the purge removes them. BENCH_SCALE_N=none skips the rows.
 *
 * Then a burst: BENCH_BURST delayed tasks (default 100 000) all due at one instant, in a fresh
 * database; their start lateness (first RUNNING event minus the instant) p50/p99, next to the
 * same number of delayed jobs due at one instant through the scheduler benchmark's plain BullMQ
 * pipeline (the same worker calls and rows per task), in the same run. BENCH_BURST=0 skips it.
 *
 * Bounded: loopback only, every wait has a limit (BENCH_TIME_LIMIT_MS, default 60 min); the
 * databases, Redis keys and processes it made are removed even on failure.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Redis from 'ioredis';
import { createPool, Pool, RowDataPacket } from 'mysql2/promise';
import { CreateTask, SchedulerClient } from '@baton/scheduler-client';
import { createDataSource } from '../apps/scheduler/src/database';
import { ENTITIES } from '../apps/scheduler/src/entities';
import {
  BENCH_ADMIN_KEY,
  BenchError,
  Child,
  cpuMs,
  inParallel,
  percentile,
  sleep,
  SERVICE_NODE_ARGS,
  startBenchWorker,
  startChild,
  statusCounts,
} from './bench-support';
import { knobs, machineLoad } from './bench-harness';
import type { PipelineCommand, PipelineReply } from './bullmq-pipeline';

const env = process.env;

function ints(name: string, fallback: string): number[] {
  const raw = env[name] || fallback;
  const out = raw.split(',').map((s) => Number(s.trim()));
  if (out.some((n) => !Number.isInteger(n) || n < 0))
    throw new BenchError(`${name} must be integers >= 0, comma-separated`);
  return out;
}

/** `none`: no scale rows (for a burst or purge run alone). N = 0 is always the first row. */
const STEPS =
  env.BENCH_SCALE_N === 'none'
    ? []
    : [...new Set(ints('BENCH_SCALE_N', '10000,100000'))]
        .filter((n) => n > 0)
        .sort((a, b) => a - b);
const [IMMEDIATE] = ints('BENCH_IMMEDIATE', '20000');
const [WARMUP] = ints('BENCH_WARMUP', '2000');
const [BURST] = ints('BENCH_BURST', '100000');
const [PURGE] = ints('BENCH_PURGE', '0');
const [TIME_LIMIT_MS] = ints('BENCH_TIME_LIMIT_MS', '3600000');
const [QUIET_MS] = ints('BENCH_QUIET_MS', '15000');
const BATCH = 500;
const IN_FLIGHT = 4;

const RUN_ID = randomBytes(4).toString('hex');
const SECRET = `bench-${randomBytes(16).toString('hex')}`;
const KEY_PREFIX = `bench:${RUN_ID}`;
const MYSQL = { host: '127.0.0.1', port: 3306, user: 'root', password: '' };
const deadline = Date.now() + TIME_LIMIT_MS;

const cleanups: { what: string; run: () => Promise<void> }[] = [];
function onCleanup(what: string, run: () => Promise<void>): void {
  cleanups.push({ what, run });
}
async function cleanup(): Promise<void> {
  for (const c of cleanups.splice(0).reverse()) {
    try {
      await c.run();
    } catch (err) {
      console.error(`cleanup: ${c.what}: ${(err as Error).message}`);
    }
  }
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

async function redisUsedMb(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0) / 1048576;
}

async function tableMb(db: Pool, database: string): Promise<number> {
  await db.query('ANALYZE TABLE baton_task');
  const [rows] = await db.query<RowDataPacket[]>(
    `SELECT SUM(data_length + index_length) AS bytes FROM information_schema.tables
      WHERE table_schema = ? AND table_name LIKE 'baton\\_task%'`,
    [database],
  );
  return Number(rows[0].bytes ?? 0) / 1048576;
}

/** A fresh database and a scheduler + worker on it. */
async function startBaton(
  admin: Pool,
  name: string,
  extra: Record<string, string> = {},
  existing?: string,
): Promise<{ scheduler: Child; worker: Child; db: Pool; database: string; api: SchedulerClient }> {
  const database = existing ?? `baton_scale_${RUN_ID}_${name}`;
  if (!existing) {
    await admin.query(`CREATE DATABASE ${database}`);
    onCleanup(`drop database ${database}`, async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${database}`);
    });
  }
  const scheduler = await startChild(
    'scheduler',
    'dist/apps/scheduler/src/main.js',
    {
      SCHEDULER_PORT: '0',
      BATON_INSTANCE_ID: `scale-${RUN_ID}-${name}`,
      BATON_DB: 'mysql',
      BATON_MYSQL_DATABASE: database,
      BATON_DB_MIGRATE: 'true',
      BATON_QUEUE: 'redis',
      BATON_QUEUE_PREFIX: `${KEY_PREFIX}:${name}:q`,
      BATON_LOCK: 'redis',
      BATON_LOCK_PREFIX: `${KEY_PREFIX}:${name}:lock:`,
      BATON_AUTH_MODE: 'hmac',
      BATON_AUTH_SECRET: SECRET,
      BATON_ADMIN_KEY: BENCH_ADMIN_KEY,
      ...Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('BATON_'))),
      ...extra,
    },
    {
      timeoutMs: 60_000,
      nodeArgs: [
        ...SERVICE_NODE_ARGS,
        ...(env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${env.BENCH_CPU_PROF}`] : []),
      ],
    },
  );
  onCleanup('stop scheduler', () => scheduler.stop());
  const workerId = `scale-w-${name}`;
  const worker = await startBenchWorker(workerId, scheduler.url, SECRET);
  onCleanup('stop worker', () => worker.stop());
  const api = new SchedulerClient({
    urls: [scheduler.url],
    timeoutMs: 120_000,
    apiKey: BENCH_ADMIN_KEY,
  });
  const until = Date.now() + 30_000;
  while (
    !(await api.listWorkers()).some((w) => w.worker_id === workerId && w.health === 'healthy')
  ) {
    if (Date.now() > until) throw new BenchError(`worker ${workerId} not healthy within 30 s`);
    await sleep(100);
  }
  const db = createPool({ ...MYSQL, database, connectionLimit: 4 });
  onCleanup('close pool', () => db.end());
  return { scheduler, worker, db, database, api };
}

/** Creates `n` tasks made by `make` in batches of 500, 4 batches at once; tasks/s. */
async function createMany(
  api: SchedulerClient,
  n: number,
  make: (i: number) => CreateTask,
): Promise<number> {
  const batches: CreateTask[][] = [];
  for (let i = 0; i < n; i += BATCH)
    batches.push(Array.from({ length: Math.min(BATCH, n - i) }, (_, k) => make(i + k)));
  const t0 = Date.now();
  await inParallel(batches, IN_FLIGHT, async (tasks) => {
    if (Date.now() > deadline) throw new BenchError('time limit reached while creating');
    await api.createTasks({ tasks });
  });
  return (n * 1000) / Math.max(1, Date.now() - t0);
}

async function finishedCount(db: Pool, prefix: string): Promise<number> {
  const [rows] = await db.query<RowDataPacket[]>(
    "SELECT COUNT(*) AS n FROM baton_task WHERE status = 'FINISH' AND task_name LIKE ?",
    [`${prefix}%`],
  );
  return Number(rows[0].n);
}

interface Row {
  waiting: number;
  createPerS: number | null;
  tasksPerS: number;
  cpuPerTask: number;
  rss: number;
  rssQuiet: number;
  redis: number;
  table: number;
}

async function immediateRun(
  baton: Awaited<ReturnType<typeof startBaton>>,
  prefix: string,
  count = IMMEDIATE,
): Promise<{ tasksPerS: number; cpuPerTask: number }> {
  const cpu0 = cpuMs(baton.scheduler.pid);
  const t0 = Date.now();
  await createMany(baton.api, count, (i) => ({
    create_info: { task_type: 'demo.echo', task_name: `${prefix}${i}` },
    params: { i },
  }));
  let stalled = Date.now();
  let last = -1;
  for (;;) {
    const done = await finishedCount(baton.db, prefix);
    if (done >= count) break;
    if (done !== last) {
      last = done;
      stalled = Date.now();
    }
    if (Date.now() - stalled > 120_000 || Date.now() > deadline)
      throw new BenchError(
        `${prefix}: ${done}/${count} finished, stalled: ${JSON.stringify(await statusCounts(baton.db))}`,
      );
    await sleep(200);
  }
  const [r] = await baton.db.query<RowDataPacket[]>(
    'SELECT MIN(created_at) AS a, MAX(finished_at) AS b FROM baton_task WHERE task_name LIKE ?',
    [`${prefix}%`],
  );
  const wall = Number(r[0].b) - Math.min(Number(r[0].a), t0);
  return {
    tasksPerS: (count * 1000) / wall,
    cpuPerTask: (cpuMs(baton.scheduler.pid) - cpu0) / count,
  };
}

async function scaleRows(admin: Pool, redis: Redis): Promise<Row[]> {
  const baton = await startBaton(admin, 'scale');
  const rows: Row[] = [];
  const redis0 = await redisUsedMb(redis);
  const hours2 = new Date(Date.now() + 2 * 3600_000).toISOString();
  let waiting = 0;
  // A warm-up first (JIT, pools, caches), so N = 0 is not the cold row everything is compared with.
  await immediateRun(baton, 'warm-', WARMUP);
  for (const target of [0, ...STEPS]) {
    let createPerS: number | null = null;
    if (target > waiting) {
      const from = waiting;
      createPerS = await createMany(baton.api, target - waiting, (i) => ({
        create_info: { task_type: 'demo.echo', task_name: `later ${from + i}` },
        params: { i: from + i },
        process_arg: { start_time: hours2 },
      }));
      waiting = target;
      // Let the periodic work (dispatch, checks) see the new backlog before measuring.
      await sleep(3000);
    }
    const run = await immediateRun(baton, `now-${target}-`);
    rows.push({
      waiting,
      createPerS,
      ...run,
      rss: rssMb(baton.scheduler.pid),
      rssQuiet: await sleep(QUIET_MS).then(() => rssMb(baton.scheduler.pid)),
      redis: (await redisUsedMb(redis)) - redis0,
      table: await tableMb(baton.db, baton.database),
    });
    console.log(line(rows[rows.length - 1], rows[0]));
  }
  await baton.worker.stop();
  await baton.scheduler.stop();
  return rows;
}

const fmt = (n: number, d = 0): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

function line(r: Row, base: Row): string {
  return [
    fmt(r.waiting).padStart(10),
    (r.createPerS === null ? '-' : fmt(r.createPerS)).padStart(9),
    `${fmt(r.tasksPerS)} (${fmt(r.tasksPerS / base.tasksPerS, 2)}×)`.padStart(16),
    `${fmt(r.cpuPerTask, 2)} (${fmt(r.cpuPerTask / base.cpuPerTask, 2)}×)`.padStart(16),
    fmt(r.rss).padStart(8),
    fmt(r.rssQuiet).padStart(9),
    fmt(r.redis, 1).padStart(9),
    fmt(r.table, 1).padStart(9),
  ].join('  ');
}

/** Baton: BURST tasks due at one instant; start lateness of each (first RUNNING - instant). */
async function batonBurst(admin: Pool): Promise<number[]> {
  const baton = await startBaton(admin, 'burst');
  // Far enough ahead for every create to land first (at >= 2,000/s), then the instant.
  const at = Date.now() + Math.max(20_000, BURST / 2);
  const iso = new Date(at).toISOString();
  const rate = await createMany(baton.api, BURST, (i) => ({
    create_info: { task_type: 'demo.echo', task_name: `burst ${i}` },
    params: { i },
    process_arg: { start_time: iso },
  }));
  if (Date.now() > at)
    throw new BenchError(`the burst's creation (${fmt(rate)}/s) ran past its instant`);
  const until = at + 600_000;
  while ((await finishedCount(baton.db, 'burst ')) < BURST) {
    if (Date.now() > until) throw new BenchError('the burst did not finish within 10 min');
    await sleep(500);
  }
  const late = await burstLateness(baton.db, at);
  await baton.worker.stop();
  await baton.scheduler.stop();
  return late;
}

/**
 * BullMQ: the scheduler benchmark's plain BullMQ pipeline (the same worker calls and rows per task
 * as Baton, bench/bullmq-pipeline.ts) with BURST delayed jobs due at one instant; start lateness
 * of each from its RUNNING event, as for Baton.
 */
async function bullBurst(admin: Pool): Promise<number[]> {
  const database = `baton_scale_${RUN_ID}_bull`;
  await admin.query(`CREATE DATABASE ${database}`);
  onCleanup(`drop database ${database}`, async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${database}`);
  });
  // The pipeline writes the scheduler's schema, made by the scheduler's own migrations.
  const ds = createDataSource({ type: 'mysql', ...MYSQL, database, poolSize: 2 }, ENTITIES);
  await ds.initialize();
  try {
    await ds.runMigrations();
  } finally {
    await ds.destroy();
  }
  const worker = await startChild('worker', 'dist/apps/worker-template/src/main.js', {
    WORKER_PORT: '0',
    WORKER_ID: 'scale-bull-w',
    WORKER_CAPACITY: '512',
    WORKER_STORE: 'memory',
    BATON_AUTH_MODE: 'hmac',
    BATON_AUTH_SECRET: SECRET,
  });
  onCleanup('stop bull worker', () => worker.stop());
  const pipeline = await startChild(
    'bullmq pipeline',
    'dist/bench/bullmq-pipeline.js',
    {
      BENCH_MYSQL_DATABASE: database,
      BENCH_BULL_PREFIX: `${KEY_PREFIX}:bull`,
      BENCH_WORKER_URL: worker.url,
      BATON_AUTH_SECRET: SECRET,
      BENCH_CONCURRENCY: '256',
      BENCH_POOL: '20',
      BENCH_BATCH: String(BATCH),
      BENCH_CREATE_IN_FLIGHT: String(IN_FLIGHT),
    },
    { ipc: true },
  );
  onCleanup('stop bullmq pipeline', () => pipeline.stop());
  const db = createPool({ ...MYSQL, database, connectionLimit: 2 });
  onCleanup('close bull pool', () => db.end());
  const at = Date.now() + Math.max(20_000, BURST / 2);
  const created = new Promise<void>((resolve, reject) => {
    pipeline.proc.on('message', (m: PipelineReply) => {
      if (m.type === 'created') resolve();
      if (m.type === 'error') reject(new BenchError(`BullMQ pipeline: ${m.message}`));
    });
  });
  pipeline.proc.send({ type: 'run', prefix: 'burst ', tasks: BURST, at } satisfies PipelineCommand);
  await created;
  if (Date.now() > at) throw new BenchError('BullMQ: adding the burst ran past its instant');
  const until = at + 600_000;
  while ((await finishedCount(db, 'burst ')) < BURST) {
    if (Date.now() > until) throw new BenchError('BullMQ: the burst did not finish within 10 min');
    await sleep(500);
  }
  const late = await burstLateness(db, at);
  await pipeline.stop();
  await worker.stop();
  return late;
}

/** Start lateness of the burst's tasks: first RUNNING event minus the instant, ascending. */
async function burstLateness(db: Pool, at: number): Promise<number[]> {
  const [rows] = await db.query<RowDataPacket[]>(
    `SELECT (SELECT MIN(e.created_at) FROM baton_task_event e
              WHERE e.task_id = t.task_id AND e.to_status = 'RUNNING') AS running
       FROM baton_task t WHERE t.task_name LIKE 'burst %'`,
  );
  return rows.map((r) => Number(r.running) - at).sort((a, b) => a - b);
}

/**
 * Retention's cost: PURGE finished tasks 40 days old (with an event each) copied into a fresh
 * database from one real finished task; immediate tasks/s with retention off, then again while
 * the purge removes them (BATON_RETENTION_INTERVAL_MS 1 s, its default batches and pause).
 */
async function purgeRun(admin: Pool): Promise<{ off: number; on: number; purged: number }> {
  const off = await startBaton(admin, 'purge', { BATON_RETENTION_DAYS: '0' });
  const [seed] = await off.api.createTasks({
    tasks: [{ create_info: { task_type: 'demo.echo', task_name: 'seed' }, params: {} }],
  });
  const until = Date.now() + 30_000;
  while ((await finishedCount(off.db, 'seed')) < 1) {
    if (Date.now() > until) throw new BenchError('the seed task did not finish');
    await sleep(100);
  }
  const [cols] = await off.db.query<RowDataPacket[]>(
    `SELECT column_name AS c FROM information_schema.columns
      WHERE table_schema = ? AND table_name = 'baton_task' ORDER BY ordinal_position`,
    [off.database],
  );
  const old = Date.now() - 40 * 86_400_000;
  const override: Record<string, string> = {
    task_id: "CONCAT('P', LPAD(seq, 25, '0'))",
    task_name: "CONCAT('old ', seq)",
    idempotency_key: 'NULL',
    created_at: String(old),
    updated_at: String(old),
    started_at: String(old),
    finished_at: String(old),
  };
  const names = cols.map((r) => String(r.c));
  const select = names.map((c) => override[c] ?? c).join(', ');
  for (let from = 1; from <= PURGE; from += 100_000) {
    const to = Math.min(PURGE, from + 99_999);
    await off.db.query(
      `INSERT INTO baton_task (${names.join(', ')})
       SELECT ${select} FROM baton_task JOIN seq_${from}_to_${to} WHERE task_id = ?`,
      [seed.task_id],
    );
    await off.db.query(
      `INSERT INTO baton_task_event (task_id, from_status, to_status, reason, actor, attempt, created_at)
       SELECT CONCAT('P', LPAD(seq, 25, '0')), 'SUCCESS', 'FINISH', 'cleaned up', 'bench', 1, ?
         FROM seq_${from}_to_${to}`,
      [old],
    );
  }
  const offRun = await immediateRun(off, 'off-');
  await off.worker.stop();
  await off.scheduler.stop();
  const on = await startBaton(
    admin,
    'purge',
    { BATON_RETENTION_INTERVAL_MS: '1000' },
    off.database,
  );
  const left = async (): Promise<number> => {
    const [r] = await on.db.query<RowDataPacket[]>(
      "SELECT COUNT(*) AS n FROM baton_task WHERE task_name LIKE 'old %'",
    );
    return Number(r[0].n);
  };
  await sleep(2000); // the first purge pass is under way
  const before = await left();
  const onRun = await immediateRun(on, 'on-');
  const purged = before - (await left());
  await on.worker.stop();
  await on.scheduler.stop();
  if (purged === 0) throw new BenchError('nothing was purged while the immediate tasks ran');
  return { off: offRun.tasksPerS, on: onRun.tasksPerS, purged };
}

async function deleteRedisKeys(redis: Redis): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `*${KEY_PREFIX}:*`, 'COUNT', 1000);
    if (keys.length) await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}

async function main(): Promise<void> {
  const admin = createPool({ ...MYSQL, connectionLimit: 2 });
  onCleanup('close admin pool', () => admin.end());
  const redis = new Redis({ host: '127.0.0.1', port: 6379, maxRetriesPerRequest: 1 });
  onCleanup('redis keys', async () => {
    await deleteRedisKeys(redis);
    redis.disconnect();
  });
  if (env.BENCH_SCALE_N !== 'none') {
    console.log(
      `scale: ${fmt(IMMEDIATE)} immediate demo.echo tasks with N delayed tasks waiting (start_time +2 h); ratios against N = 0`,
    );
    const set = Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('BATON_')));
    console.log(`scheduler settings: ${knobs(set as Record<string, string>)}`);
    console.log(
      [
        'waiting N'.padStart(10),
        'create/s'.padStart(9),
        'immediate/s'.padStart(16),
        'CPU ms/task'.padStart(16),
        'RSS MB'.padStart(8),
        'idle RSS'.padStart(9),
        'Redis MB'.padStart(9),
        'table MB'.padStart(9),
      ].join('  '),
    );
    await scaleRows(admin, redis);
  }
  if (PURGE > 0) {
    const r = await purgeRun(admin);
    console.log(
      `retention: ${fmt(PURGE)} finished tasks 40 days old; immediate tasks/s ${fmt(r.off)} with retention off, ` +
        `${fmt(r.on)} while the purge ran (${fmt(r.on / r.off, 2)}×), ${fmt(r.purged)} purged meanwhile`,
    );
  }
  if (BURST > 0) {
    const baton = await batonBurst(admin);
    const bull = await bullBurst(admin);
    const p = (xs: number[], q: number): string => `${fmt(percentile(xs, q))} ms`;
    console.log(`burst of ${fmt(BURST)} delayed tasks due at one instant, start lateness:`);
    console.log(`  Baton   p50 ${p(baton, 50)}  p99 ${p(baton, 99)}  max ${p(baton, 100)}`);
    console.log(`  BullMQ  p50 ${p(bull, 50)}  p99 ${p(bull, 99)}  max ${p(bull, 100)}`);
    console.log(
      `  Baton / BullMQ: p50 ${fmt(percentile(baton, 50) / Math.max(1, percentile(bull, 50)), 2)}×, p99 ${fmt(percentile(baton, 99) / Math.max(1, percentile(bull, 99)), 2)}×`,
    );
  }
}

console.log(`machine before: ${machineLoad()}`);
main()
  .then(() => console.log(`machine after: ${machineLoad()}`))
  .catch((err: unknown) => {
    console.error(err instanceof BenchError ? `bench:scale: ${err.message}` : err);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
