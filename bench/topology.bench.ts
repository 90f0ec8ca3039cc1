/**
 * Topology benchmark (`npm run bench:topology`; not part of the test suite): what Baton's
 * topologies cost next to its simple tasks, and next to BullMQ flows, in one run.
 *
 * One scheduler (MariaDB, Redis queue and locks, HMAC) on the shipped defaults and one template
 * worker as real processes, as the scheduler benchmark runs them (bench/scheduler.bench.ts). For each system, each
 * round runs, one after the other:
 *
 * - simple: BENCH_SIMPLE independent sync `demo.echo` tasks (default 1,000), created in batches
 *   through the API (Baton) or enqueued with `addBulk` (BullMQ): the peer of the fan-out.
 * - fan-out: a fan-out/fan-in of BENCH_FANOUT `demo.echo` nodes (default 1,000). Baton: one run of
 *   a definition with a for_each node over the run's input list (one task per item, at most
 *   BENCH_FORK_CONCURRENCY at once, default the runner's concurrency; 0: no cap), joined by one
 *   `demo.echo` node. BullMQ: a `FlowProducer` flow whose parent (the join) has BENCH_FANOUT
 *   children. BENCH_FANOUT + 1 nodes either way.
 * - chain: BENCH_CHAIN `demo.echo` nodes one after the other (default 200). Baton: a definition
 *   n1 -> n2 -> ... ; BullMQ: a nested flow, each job the only child of the next.
 *
 * BullMQ runs in the scheduler benchmark's pipeline process (bench/bullmq-pipeline.ts, flows from
 * bench/bullmq-flows.ts): each job makes the same worker calls and writes the same rows as Baton
 * does for a sync `demo.echo` task, on the same Redis and MariaDB, with the same worker process.
 *
 * Figures per shape and system (the round of median wall time of BENCH_ROUNDS, default 3, after
 * a warm-up of each shape): wall time (Baton: the run's start request to the run's finished_at;
 * BullMQ: the first row write to the last job's finished_at; simple: to the last finished_at),
 * nodes/s, wall ms per node, the hand-off (the per-node scheduling latency: a chain node's first
 * RUNNING event minus its parent's finished_at, p50/p99; the join's alone for a fan-out; it holds
 * the worker's `create` call, the same for both) and, for Baton, its first part (parent's
 * finished_at to the node's task row: the change feed and the run's evaluation), CPU ms per node
 * of the orchestrator (scheduler or pipeline), the worker, the MariaDB server and the Redis server,
 * and SQL statements per node (whole servers and global counters: whatever else uses them counts
 * too). Then Baton / BullMQ per shape, each fan-out over its own system's simple tasks/s (also
 * round by round), and the target: Baton's fan-out at >= 0.70 of its simple tasks/s, ahead of
 * BullMQ's.
 *
 * Bounded: loopback only, every wait has a limit, the whole run stops after BENCH_TIME_LIMIT_MS
 * (default 10 min); the databases, Redis keys and processes it made are removed even on failure.
 *
 * Knobs: BENCH_FANOUT, BENCH_CHAIN, BENCH_SIMPLE, BENCH_ROUNDS, BENCH_WARMUP (simple tasks of the
 * warm-up, default 500, with a fan-out of up to 100 and a chain of up to 20; 0: no warm-up),
 * BENCH_SYSTEMS (baton,bullmq), BENCH_FORK_CONCURRENCY, BENCH_CONCURRENCY (runner concurrency =
 * BullMQ worker concurrency, 256), BENCH_POOL (MySQL pool of each system, 20), BENCH_CPU_PROF (a
 * directory: the scheduler runs with --cpu-prof and writes its profile there when it stops). Any
 * BATON_* variable set in the environment overrides the scheduler setting of the same name.
 */
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { createPool, Pool } from 'mysql2/promise';
import { SchedulerClient } from '@baton/scheduler-client';
import {
  BenchError,
  Child,
  dbCounters,
  inParallel,
  pidOf,
  rowFigures,
  SERVICE_NODE_ARGS,
  startBenchWorker,
  statusCounts,
  waitForFinish,
} from './bench-support';
import {
  askPipeline,
  BENCH_MYSQL,
  benchClient,
  cpuSnapshot,
  createBenchDatabase,
  deadlineIn,
  deleteRedisKeys,
  envInt,
  onCleanup,
  Probe,
  runBench,
  schedulerSettings,
  knobs,
  startBenchScheduler,
  taskBatches,
  waitForHealthyWorker,
  startBullPipeline,
} from './bench-harness';
import type { PipelineCommand } from './bullmq-pipeline';
import {
  chainDefinition,
  fanoutDefinition,
  handoffs,
  kept,
  line,
  nodeRows,
  Result,
  Shape,
  System,
  table,
  verdict,
  waitForTask,
} from './topology-support';

const env = process.env;
const FANOUT = envInt('BENCH_FANOUT', 1000);
const CHAIN = envInt('BENCH_CHAIN', 200, 2);
const SIMPLE = envInt('BENCH_SIMPLE', 1000);
const ROUNDS = envInt('BENCH_ROUNDS', 3);
const WARMUP = envInt('BENCH_WARMUP', 500, 0);
const CONCURRENCY = envInt('BENCH_CONCURRENCY', 256);
const FORK_CONCURRENCY = envInt('BENCH_FORK_CONCURRENCY', CONCURRENCY, 0);
const POOL = envInt('BENCH_POOL', 20);
const TIME_LIMIT_MS = envInt('BENCH_TIME_LIMIT_MS', 600_000);
const SYSTEMS = (env.BENCH_SYSTEMS ?? 'baton,bullmq').split(',');
const PROFILE_DIR = env.BENCH_CPU_PROF ?? '';
const BATCH = 500;
const IN_FLIGHT = 4;
/** One run of a shape may take this long at most (within the whole bench's limit). */
const RUN_LIMIT_MS = 300_000;

const RUN_ID = randomBytes(4).toString('hex');
const SECRET = `bench-${randomBytes(16).toString('hex')}`;
const BATON_DB = `baton_topo_${RUN_ID}`;
const BULL_DB = `baton_topo_${RUN_ID}_bull`;
const KEY_PREFIX = `bench:${RUN_ID}`;
const deadline = deadlineIn(TIME_LIMIT_MS);

/** The sizes of one round: the measured ones, or the warm-up's. */
interface Sizes {
  simple: number;
  fanout: number;
  chain: number;
}
const MEASURED: Sizes = { simple: SIMPLE, fanout: FANOUT, chain: CHAIN };
const WARM: Sizes = {
  simple: WARMUP,
  fanout: Math.min(100, FANOUT),
  chain: Math.min(20, CHAIN),
};

/** What a round of one system runs on: its database, the processes it counts, and how it runs. */
interface SystemUnderTest {
  system: System;
  db: Pool;
  probe: Probe;
  simple(prefix: string, tasks: number): Promise<{ startedAt: number }>;
  /** Starts a run of the shape; resolves when it is over, with when it started and ended. */
  topology(
    shape: Exclude<Shape, 'simple'>,
    prefix: string,
    nodes: number,
  ): Promise<{ startedAt: number; endedAt: number; where: string; param: string }>;
}

function baton(api: SchedulerClient, db: Pool, probe: Probe): SystemUnderTest {
  return {
    system: 'Baton',
    db,
    probe,
    async simple(prefix, tasks) {
      const startedAt = Date.now();
      await inParallel(taskBatches(prefix, tasks, BATCH), IN_FLIGHT, async (b) => {
        await api.createTasks({ tasks: b }).catch((err: Error) => {
          throw new BenchError(`batch create failed: ${err.message}`);
        });
      });
      return { startedAt };
    },
    async topology(shape, _prefix, nodes) {
      const name = shape === 'fan-out' ? 'bench-fanout' : `bench-chain-${nodes}`;
      const input =
        shape === 'fan-out' ? { items: Array.from({ length: nodes }, (_, i) => i) } : {};
      const startedAt = Date.now();
      const run = await api.call<{ run_id: string }>({
        method: 'POST',
        path: `/v1/topologies/${name}/runs`,
        body: { input },
        resend: 'unsent',
      });
      const end = await waitForTask(db, run.run_id, runLimit(), `Baton ${shape} run`);
      if (end.outcome !== 'SUCCESS')
        throw new BenchError(`Baton ${shape} run ${run.run_id} ended ${end.outcome}`);
      return {
        startedAt,
        endedAt: end.finished,
        where: 't.control_task_id = ?',
        param: run.run_id,
      };
    },
  };
}

function bullmq(pipeline: Child, db: Pool, probe: Probe): SystemUnderTest {
  return {
    system: 'BullMQ',
    db,
    probe,
    async simple(prefix, tasks) {
      return askPipeline(pipeline, { type: 'run', prefix, tasks }, 'created');
    },
    async topology(shape, prefix, nodes) {
      const cmd: PipelineCommand = {
        type: 'flow',
        shape: shape === 'fan-out' ? 'fanout' : 'chain',
        prefix,
        nodes,
      };
      const added = await askPipeline(pipeline, cmd, 'flowed');
      const end = await waitForTask(db, added.last, runLimit(), `BullMQ ${shape} flow`);
      return {
        startedAt: added.startedAt,
        endedAt: end.finished,
        where: 't.task_name LIKE ?',
        param: `${prefix}%`,
      };
    },
  };
}

const runLimit = (): number => Math.min(deadline.at, Date.now() + RUN_LIMIT_MS);

function perNode(
  probe: Probe,
  cpu: [Record<string, number>, Record<string, number>],
  nodes: number,
): Result['cpu'] {
  const d = (k: string): number => (cpu[1][k] - cpu[0][k]) / nodes;
  const [orchestrator, worker] = Object.keys(probe.apps);
  return {
    orchestrator: d(orchestrator),
    worker: d(worker),
    mariadb: d('mariadb'),
    redis: d('redis'),
  };
}

/** One shape on one system: run, wait, and read the figures back from the rows. */
async function measure(
  s: SystemUnderTest,
  shape: Shape,
  round: number,
  label: string,
  n: number,
): Promise<Result> {
  deadline.check(`${s.system} ${label}`);
  const prefix = `${label}-`;
  const sql0 = (await dbCounters(s.db)).Questions;
  const cpu0 = cpuSnapshot(s.probe);
  if (shape === 'simple') {
    const before = (await statusCounts(s.db)).FINISH ?? 0;
    const created = s.simple(prefix, n);
    const finished = waitForFinish(s.db, before + n, runLimit(), `${s.system} ${label}`, {
      everyMs: 50,
    });
    const [{ startedAt }] = await Promise.all([created, finished]);
    const cpu1 = cpuSnapshot(s.probe);
    const sql = ((await dbCounters(s.db)).Questions - sql0) / n;
    const rows = await rowFigures(s.db, prefix);
    if (rows.tasks !== n)
      throw new BenchError(`${s.system} ${label}: ${rows.tasks} rows, not ${n}`);
    return {
      shape,
      system: s.system,
      round,
      nodes: n,
      wallMs: rows.lastFinishedAt - startedAt,
      handoff: [],
      toRow: [],
      cpu: perNode(s.probe, [cpu0, cpu1], n),
      sql,
    };
  }
  const run = await s.topology(shape, prefix, n);
  const cpu1 = cpuSnapshot(s.probe);
  const nodes = shape === 'fan-out' ? n + 1 : n;
  const sql = ((await dbCounters(s.db)).Questions - sql0) / nodes;
  const rows = await nodeRows(s.db, run.where, run.param);
  return {
    shape,
    system: s.system,
    round,
    nodes,
    wallMs: run.endedAt - run.startedAt,
    ...handoffs(`${s.system} ${label}`, shape, rows, nodes),
    cpu: perNode(s.probe, [cpu0, cpu1], nodes),
    sql,
  };
}

/** The warm-up (round 0), then ROUNDS rounds of the three shapes, each printed as it ends. */
async function rounds(s: SystemUnderTest): Promise<Result[]> {
  const shapes: [Shape, keyof Sizes, string][] = [
    ['simple', 'simple', 's'],
    ['fan-out', 'fanout', 'f'],
    ['chain', 'chain', 'c'],
  ];
  const out: Result[] = [];
  for (let round = WARMUP > 0 ? 0 : 1; round <= ROUNDS; round++)
    for (const [shape, size, tag] of shapes) {
      const r = await measure(s, shape, round, `${tag}${round}`, (round ? MEASURED : WARM)[size]);
      console.log(line(`${s.system} ${shape} ${round ? `round ${round}` : 'warm-up'}`, r));
      out.push(r);
    }
  return out;
}

async function main(): Promise<void> {
  const admin = createPool({ ...BENCH_MYSQL, connectionLimit: 2 });
  onCleanup('close admin pool', () => admin.end());
  onCleanup('delete Redis keys', () => deleteRedisKeys(KEY_PREFIX));
  await createBenchDatabase(admin, BATON_DB, false);
  await createBenchDatabase(admin, BULL_DB, true);
  const settings = schedulerSettings();
  console.log(
    `topology benchmark ${RUN_ID}: fan-out ${FANOUT}, chain ${CHAIN}, simple ${SIMPLE}, ` +
      `${ROUNDS} rounds (median kept), warm-up ${WARMUP > 0 ? `${WARMUP}/${WARM.fanout}/${WARM.chain}` : 'none'}; ` +
      `node ${process.version}, ${cpus().length} CPUs, load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
  console.log(
    `scheduler: ${knobs(settings)}; ${Object.entries(settings)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')} fork concurrency ${FORK_CONCURRENCY || 'none'}; ` +
      `BullMQ pipeline: worker concurrency ${CONCURRENCY}, MySQL pool ${POOL}; ` +
      `node ${SERVICE_NODE_ARGS.join(' ') || '(no flags)'} (both)` +
      (PROFILE_DIR ? `; scheduler --cpu-prof (${PROFILE_DIR})` : ''),
  );

  const scheduler = await startBenchScheduler({
    runId: RUN_ID,
    database: BATON_DB,
    keyPrefix: KEY_PREFIX,
    secret: SECRET,
    settings,
    extraNodeArgs: PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [],
  });
  onCleanup('stop scheduler', () => scheduler.stop());
  const workerId = `bench-worker-${RUN_ID}`;
  const worker = await startBenchWorker(workerId, scheduler.url, SECRET);
  onCleanup('stop worker', () => worker.stop());
  await waitForHealthyWorker(scheduler.url, workerId);
  const servers = { mariadb: pidOf('mariadbd') ?? pidOf('mysqld'), redis: pidOf('redis-server') };
  const results: Result[] = [];

  if (SYSTEMS.includes('baton')) {
    const api = benchClient(scheduler.url);
    const defs = [
      fanoutDefinition('bench-fanout', FORK_CONCURRENCY),
      chainDefinition(`bench-chain-${CHAIN}`, CHAIN),
      chainDefinition(`bench-chain-${WARM.chain}`, WARM.chain),
    ];
    for (const def of defs)
      await api.call({ method: 'POST', path: '/v1/topologies', body: def, resend: 'unsent' });
    const db = createPool({ ...BENCH_MYSQL, database: BATON_DB, connectionLimit: 2 });
    onCleanup('close baton pool', () => db.end());
    const probe = { apps: { scheduler: scheduler.pid, worker: worker.pid }, ...servers };
    results.push(...(await rounds(baton(api, db, probe))));
  }
  // The scheduler's idle loops must not load the machine while BullMQ runs (a profile is
  // written when it exits).
  await scheduler.stop();

  if (SYSTEMS.includes('bullmq')) {
    const { db, pipeline } = await startBullPipeline({
      database: BULL_DB,
      keyPrefix: KEY_PREFIX,
      workerUrl: worker.url,
      secret: SECRET,
      concurrency: CONCURRENCY,
      pool: POOL,
      batch: BATCH,
      inFlight: IN_FLIGHT,
    });
    const probe = { apps: { pipeline: pipeline.pid, worker: worker.pid }, ...servers };
    results.push(...(await rounds(bullmq(pipeline, db, probe))));
  }

  const medians = kept(results);
  console.log('');
  console.log(table(medians));
  console.log('');
  console.log(verdict(medians, results));
  console.log(
    `load at the end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
}

runBench(main, TIME_LIMIT_MS);
