/**
 * Scheduler throughput benchmark (`npm run bench`; not part of the test suite).
 *
 * BENCH_TASKS sync `demo.echo` tasks (default 20 000) through real processes on this machine:
 * one scheduler (MariaDB, Redis queue and locks, HMAC) and one template worker. Then the same
 * workload through a plain BullMQ pipeline (bench/bullmq-pipeline.ts, its own process) on the
 * same Redis and MariaDB, twice (writing each job's rows as they come, and batching them),
 * calling the same worker process and writing the same rows. Each system gets a warm-up run (BENCH_WARMUP, default 1000) before the measured one.
 *
 * Figures: tasks/s from the first create request to the last finished_at; p50/p99 of due -> first
 * RUNNING event and of created_at -> finished_at (from the rows); CPU ms per task of the app
 * processes (/proc, user + system) and, apart, of the MariaDB and Redis servers (whole servers:
 * anything else using them at the time counts too); SQL statements and fsyncs per task (global
 * counters, same caveat).
 *
 * Bounded: loopback only, every wait has a limit, the whole run stops after BENCH_TIME_LIMIT_MS
 * (default 10 min); the databases, Redis keys and processes it made are removed even on failure.
 *
 * Knobs: BENCH_TASKS, BENCH_WARMUP, BENCH_BATCH (500), BENCH_CREATE_IN_FLIGHT (4),
 * BENCH_CONCURRENCY (runner concurrency = BullMQ worker concurrency, 256), BENCH_POOL (MySQL pool
 * of each system, 20), BENCH_SYSTEMS (baton,bullmq,bullmq-batched:
 * the second BullMQ peer writes a group of jobs' rows as one statement per kind), BENCH_CPU_PROF (a directory: the scheduler
 * and the worker run with --cpu-prof and write their profiles there, the worker's when the bench
 * ends), BENCH_LOG_LINES (10: two more Baton runs whose tasks each log that many lines, each
 * followed by one without; 0: none),
 * BENCH_WEBHOOK (`500` or `hang`: a webhook subscription to BENCH_WEBHOOK_EVENTS, default
 * `task.finished`, at a receiver in this process that answers 500 to every delivery, or never
 * answers; the run then shows what a dead receiver costs task processing. `ok`: after the
 * measured run, which has no subscription, runs with a `task.finished` subscription at a receiver
 * in this process that answers 200 at once, in turn with runs without (with, without, with,
 * without): each delivery is counted once (by webhook-id) with its lag, the time it was received
 * minus its task's finished_at; printed are the deliveries received against the tasks finished,
 * the lag's p50/p99/max, and the tasks/s with the subscription against without, with the
 * targets: lag p99 <= 2 s, tasks/s >= 0.90x). Any BATON_* variable set in the environment
 * overrides the scheduler setting of the same name.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { createPool, Pool, RowDataPacket } from 'mysql2/promise';
import {
  BenchError,
  Child,
  DbCounters,
  dbCounters,
  inParallel,
  percentile,
  pidOf,
  rowFigures,
  SERVICE_NODE_ARGS,
  sleep,
  startBenchWorker,
  waitForFinish,
} from './bench-support';
import {
  askPipeline,
  BENCH_MYSQL,
  benchClient as client,
  cpuSnapshot,
  createBenchDatabase,
  deadlineIn,
  deleteRedisKeys,
  envInt as int,
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

const env = process.env;

const TASKS = int('BENCH_TASKS', 20_000);
const WARMUP = int('BENCH_WARMUP', 1000, 0);
const BATCH = Math.min(500, int('BENCH_BATCH', 500));
const IN_FLIGHT = int('BENCH_CREATE_IN_FLIGHT', 4);
const CONCURRENCY = int('BENCH_CONCURRENCY', 256);
const POOL = int('BENCH_POOL', 20);
const TIME_LIMIT_MS = int('BENCH_TIME_LIMIT_MS', 600_000);
const SYSTEMS = (env.BENCH_SYSTEMS ?? 'baton,bullmq,bullmq-batched').split(',');
const PROFILE_DIR = env.BENCH_CPU_PROF ?? '';
/** Lines each task of a second Baton run logs (0: no such run). */
const LOG_LINES = int('BENCH_LOG_LINES', 10, 0);

const RUN_ID = randomBytes(4).toString('hex');
const SECRET = `bench-${randomBytes(16).toString('hex')}`;
const BATON_DB = `baton_bench_${RUN_ID}`;
const BULL_DB = `baton_bench_${RUN_ID}_bull`;
const BULL_BATCHED_DB = `baton_bench_${RUN_ID}_bullb`;
const KEY_PREFIX = `bench:${RUN_ID}`;
const deadline = deadlineIn(TIME_LIMIT_MS);

interface Figures {
  system: string;
  tasks: number;
  wallS: number;
  tasksPerS: number;
  createPerS: number;
  dueRun: [number, number];
  createFinish: [number, number];
  /** App processes (scheduler or pipeline, and the worker), ms per task. */
  appCpu: number;
  cpuByProcess: Record<string, number>;
  mariadbCpu: number;
  redisCpu: number;
  /** Share of the machine's CPUs in use during the run (all processes), and what the rest used. */
  machineBusy: number;
  othersCpu: number;
  eventsPerTask: number;
  claimsPerTask: number;
  sqlPerTask: Record<string, number>;
}

// ---- measuring ------------------------------------------------------------------------------

async function figures(
  system: string,
  db: Pool,
  prefix: string,
  tasks: number,
  startedAt: number,
  createdAt: number,
  cpu: [Record<string, number>, Record<string, number>],
  counters: [DbCounters, DbCounters],
  appNames: string[],
): Promise<Figures> {
  const rows = await rowFigures(db, prefix);
  if (rows.tasks !== tasks) throw new BenchError(`${system}: ${rows.tasks} rows, not ${tasks}`);
  const wallMs = rows.lastFinishedAt - startedAt;
  const per = (k: string): number => (cpu[1][k] - cpu[0][k]) / tasks;
  const cpuByProcess = Object.fromEntries(appNames.map((n) => [n, per(n)]));
  const delta = (k: keyof DbCounters): number => (counters[1][k] - counters[0][k]) / tasks;
  return {
    system,
    tasks,
    wallS: wallMs / 1000,
    tasksPerS: tasks / (wallMs / 1000),
    createPerS: tasks / ((createdAt - startedAt) / 1000),
    dueRun: [percentile(rows.dueToRun, 50), percentile(rows.dueToRun, 99)],
    createFinish: [percentile(rows.createToFinish, 50), percentile(rows.createToFinish, 99)],
    appCpu: Object.values(cpuByProcess).reduce((a, b) => a + b, 0),
    cpuByProcess,
    mariadbCpu: per('mariadb'),
    redisCpu: per('redis'),
    machineBusy:
      (cpu[1].machineBusy - cpu[0].machineBusy) / (cpu[1].machineTotal - cpu[0].machineTotal),
    // Everything else on the machine (other sessions, this orchestrator) in ms per task.
    othersCpu:
      per('machineBusy') -
      Object.values(cpuByProcess).reduce((a, b) => a + b, 0) -
      per('mariadb') -
      per('redis'),
    eventsPerTask: rows.events / tasks,
    claimsPerTask: rows.fences / tasks,
    sqlPerTask: {
      select: delta('Com_select'),
      insert: delta('Com_insert'),
      update: delta('Com_update'),
      begin: delta('Com_begin'),
      commit: delta('Com_commit'),
      questions: delta('Questions'),
      redoSyncs: delta('Redo_syncs'),
      dataFsyncs: delta('Innodb_data_fsyncs'),
    },
  };
}

async function runBaton(
  scheduler: Child,
  probe: Probe,
  db: Pool,
  prefix: string,
  tasks: number,
  finishedBefore: number,
  params: Record<string, unknown> = {},
): Promise<Figures> {
  deadline.check(`baton ${prefix}`);
  const work = taskBatches(prefix, tasks, BATCH, params);
  const counters0 = await dbCounters(db);
  const cpu0 = cpuSnapshot(probe);
  const startedAt = Date.now();
  const baton = client(scheduler.url);
  await inParallel(work, IN_FLIGHT, async (b) => {
    await baton.createTasks({ tasks: b }).catch((err: Error) => {
      throw new BenchError(`batch create failed: ${err.message}`);
    });
  });
  const createdAt = Date.now();
  await waitForFinish(db, finishedBefore + tasks, deadline.at, `baton ${prefix}`);
  const cpu1 = cpuSnapshot(probe);
  const counters1 = await dbCounters(db);
  return figures(
    'Baton',
    db,
    prefix,
    tasks,
    startedAt,
    createdAt,
    [cpu0, cpu1],
    [counters0, counters1],
    Object.keys(probe.apps),
  );
}

async function runBull(
  pipeline: Child,
  probe: Probe,
  db: Pool,
  prefix: string,
  tasks: number,
  finishedBefore: number,
  label: string,
): Promise<Figures> {
  deadline.check(`${label} ${prefix}`);
  const counters0 = await dbCounters(db);
  const cpu0 = cpuSnapshot(probe);
  const created = askPipeline(pipeline, { type: 'run', prefix, tasks }, 'created');
  const finished = waitForFinish(db, finishedBefore + tasks, deadline.at, `${label} ${prefix}`);
  const [{ startedAt, endedAt }] = await Promise.all([created, finished]);
  const cpu1 = cpuSnapshot(probe);
  const counters1 = await dbCounters(db);
  return figures(
    label,
    db,
    prefix,
    tasks,
    startedAt,
    endedAt,
    [cpu0, cpu1],
    [counters0, counters1],
    Object.keys(probe.apps),
  );
}

// ---- report ---------------------------------------------------------------------------------

const f0 = (n: number): string => (Number.isFinite(n) ? n.toFixed(0) : '-');
const f1 = (n: number): string => (Number.isFinite(n) ? n.toFixed(1) : '-');
const f2 = (n: number): string => (Number.isFinite(n) ? n.toFixed(2) : '-');

function line(label: string, r: Figures): string {
  return (
    `${label.padEnd(18)} tasks ${r.tasks}  wall ${f2(r.wallS)} s  ${f0(r.tasksPerS)} tasks/s  ` +
    `create ${f0(r.createPerS)}/s  due->run p50/p99 ${f1(r.dueRun[0])}/${f1(r.dueRun[1])} ms  ` +
    `create->finish p50/p99 ${f1(r.createFinish[0])}/${f1(r.createFinish[1])} ms  ` +
    `cpu ${f2(r.appCpu)} ms/task (${Object.entries(r.cpuByProcess)
      .map(([k, v]) => `${k} ${f2(v)}`)
      .join(', ')})`
  );
}

function table(rows: Figures[]): string {
  const out = [
    '| system | tasks | wall s | tasks/s | create/s | due→run p50 ms | due→run p99 ms | create→finish p50 ms | create→finish p99 ms | CPU ms/task (apps) | apps breakdown | MariaDB CPU ms/task | Redis CPU ms/task | other CPU ms/task | machine busy |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.system} | ${r.tasks} | ${f2(r.wallS)} | ${f0(r.tasksPerS)} | ${f0(r.createPerS)} | ` +
        `${f1(r.dueRun[0])} | ${f1(r.dueRun[1])} | ${f1(r.createFinish[0])} | ${f1(r.createFinish[1])} | ` +
        `${f2(r.appCpu)} | ${Object.entries(r.cpuByProcess)
          .map(([k, v]) => `${k} ${f2(v)}`)
          .join(', ')} | ${f2(r.mariadbCpu)} | ${f2(r.redisCpu)} | ${f2(r.othersCpu)} | ` +
        `${f0(r.machineBusy * 100)}% |`,
    ),
  ];
  return out.join('\n');
}

function sqlTable(rows: Figures[]): string {
  const keys = Object.keys(rows[0].sqlPerTask);
  return [
    `| per task (global MariaDB counters) | events | claims | ${keys.join(' | ')} |`,
    `|---|---:|---:|${keys.map(() => '---:|').join('')}`,
    ...rows.map(
      (r) =>
        `| ${r.system} | ${f2(r.eventsPerTask)} | ${f2(r.claimsPerTask)} | ${keys.map((k) => f2(r.sqlPerTask[k])).join(' | ')} |`,
    ),
  ].join('\n');
}

function ratios(baton: Figures, bull: Figures): string {
  return [
    `Baton / ${bull.system}:`,
    `  tasks/s            ${f2(baton.tasksPerS / bull.tasksPerS)}x (higher is better for Baton)`,
    `  due->run p50/p99   ${f2(baton.dueRun[0] / bull.dueRun[0])}x / ${f2(baton.dueRun[1] / bull.dueRun[1])}x (lower is better)`,
    `  create->finish p50/p99 ${f2(baton.createFinish[0] / bull.createFinish[0])}x / ${f2(baton.createFinish[1] / bull.createFinish[1])}x (lower is better)`,
    `  CPU ms/task (apps) ${f2(baton.appCpu / bull.appCpu)}x (lower is better)`,
    `  MariaDB CPU/task   ${f2(baton.mariadbCpu / bull.mariadbCpu)}x`,
  ].join('\n');
}

// ---- main -----------------------------------------------------------------------------------

async function main(): Promise<void> {
  const admin = createPool({ ...BENCH_MYSQL, connectionLimit: 2 });
  onCleanup('close admin pool', () => admin.end());
  onCleanup('delete Redis keys', () => deleteRedisKeys(KEY_PREFIX));
  const [[server]] = await admin.query<RowDataPacket[]>(
    'SELECT VERSION() AS v, @@innodb_flush_log_at_trx_commit AS flush, @@sync_binlog AS sb, @@log_bin AS lb',
  );
  await createBenchDatabase(admin, BATON_DB, false);
  await createBenchDatabase(admin, BULL_DB, true);
  await createBenchDatabase(admin, BULL_BATCHED_DB, true);

  const schedulerEnv = schedulerSettings();
  const receiver = env.BENCH_WEBHOOK ? await benchReceiver(env.BENCH_WEBHOOK) : undefined;
  if (receiver) schedulerEnv.BATON_WEBHOOK_ALLOW = 'localhost';
  const workerId = `bench-worker-${RUN_ID}`;
  console.log(
    `scheduler benchmark ${RUN_ID}: ${TASKS} demo.echo tasks (warm-up ${WARMUP}), batches of ${BATCH}, ` +
      `${IN_FLIGHT} create requests in flight; node ${process.version}, ${cpus().length} CPUs ` +
      `(${cpus()[0]?.model ?? '?'}), load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(
          ' ',
        )}; MariaDB ${String(server.v)} innodb_flush_log_at_trx_commit=${String(server.flush)} ` +
      `sync_binlog=${String(server.sb)} log_bin=${String(server.lb)}`,
  );
  console.log(
    `scheduler settings: ${knobs(schedulerEnv)}; ${Object.entries(schedulerEnv)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')} BATON_DB=mysql BATON_QUEUE=redis BATON_LOCK=redis BATON_AUTH_MODE=hmac` +
      ` node ${SERVICE_NODE_ARGS.join(' ') || '(no flags)'} (scheduler and BullMQ pipeline)` +
      (PROFILE_DIR ? ` --cpu-prof (${PROFILE_DIR})` : ''),
  );
  console.log(
    `worker: WORKER_CAPACITY=512, memory store; BullMQ pipeline: concurrency ${CONCURRENCY}, ` +
      `MySQL pool ${POOL}, removeOnComplete, 1 attempt`,
  );

  const scheduler = await startBenchScheduler({
    runId: RUN_ID,
    database: BATON_DB,
    keyPrefix: KEY_PREFIX,
    secret: SECRET,
    settings: schedulerEnv,
    extraNodeArgs: PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [],
  });
  onCleanup('stop scheduler', () => scheduler.stop());
  const worker = await startBenchWorker(
    workerId,
    scheduler.url,
    SECRET,
    PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [],
  );
  onCleanup('stop worker', () => worker.stop());
  await waitForHealthyWorker(scheduler.url, workerId);
  if (receiver && receiver.mode !== 'ok') {
    const events = (env.BENCH_WEBHOOK_EVENTS ?? 'task.finished').split(',');
    await client(scheduler.url).call({
      method: 'POST',
      path: '/v1/webhooks',
      body: { url: receiver.url, events },
      resend: 'any',
    });
    console.log(
      `webhook: a subscription to ${events.join(', ')} at a receiver that ${env.BENCH_WEBHOOK === 'hang' ? 'never answers' : `answers ${env.BENCH_WEBHOOK}`}`,
    );
  }

  const servers = { mariadb: pidOf('mariadbd') ?? pidOf('mysqld'), redis: pidOf('redis-server') };
  const results: Figures[] = [];

  if (SYSTEMS.includes('baton')) {
    const db = createPool({ ...BENCH_MYSQL, database: BATON_DB, connectionLimit: 2 });
    onCleanup('close baton pool', () => db.end());
    const probe: Probe = {
      apps: { scheduler: scheduler.pid, worker: worker.pid },
      ...servers,
    };
    if (WARMUP > 0) {
      const w = await runBaton(scheduler, probe, db, 'w-', WARMUP, 0);
      console.log(line('Baton warm-up', w));
    }
    const m = await runBaton(scheduler, probe, db, 'm-', TASKS, WARMUP);
    console.log(line('Baton', m));
    results.push(m);
    if (LOG_LINES > 0) {
      // The same tasks, each logging LOG_LINES lines its worker ships to the scheduler, in turn
      // with runs without: without, with, without, with, without. Each run of the same tasks is
      // faster than the one before (2-10% here, more at first: JIT, MariaDB's buffers), so the
      // runs with lines are measured against the runs around them, not against the first alone.
      const without = [m];
      const withLines: (typeof m)[] = [];
      for (let turn = 1; turn <= 2; turn++) {
        const l = await runBaton(
          scheduler,
          probe,
          db,
          `l${turn}-`,
          TASKS,
          WARMUP + (2 * turn - 1) * TASKS,
          {
            log_lines: LOG_LINES,
          },
        );
        console.log(line(`Baton, ${LOG_LINES} log lines a task (${turn})`, l));
        const again = await runBaton(
          scheduler,
          probe,
          db,
          `n${turn}-`,
          TASKS,
          WARMUP + 2 * turn * TASKS,
        );
        console.log(line(`Baton again, no lines (${turn})`, again));
        withLines.push(l);
        without.push(again);
        // In the tables too: where the lines cost (MariaDB or the apps).
        results.push({ ...l, system: `Baton, ${LOG_LINES} log lines a task (${turn})` });
        results.push({ ...again, system: `Baton again, no lines (${turn})` });
      }
      const mean = (runs: typeof without): number =>
        runs.reduce((n, r) => n + r.tasksPerS, 0) / runs.length;
      const share = mean(withLines) / mean(without);
      console.log(
        `worker logs: ${f0(mean(withLines))} tasks/s with ${LOG_LINES} lines a task (runs: ${withLines.map((r) => f0(r.tasksPerS)).join(', ')}) ` +
          `against ${f0(mean(without))} without (runs: ${without.map((r) => f0(r.tasksPerS)).join(', ')}), ` +
          `${f2(share)}x (target >= 0.90: ${share >= 0.9 ? 'MET' : 'NOT MET'})`,
      );
    }
    if (receiver?.mode === 'ok') {
      const finished = WARMUP + TASKS + (LOG_LINES > 0 ? 4 * TASKS : 0);
      results.push(...(await webhookRuns(scheduler, probe, db, receiver, m, finished)));
    }
    const status = {
      data: await client(scheduler.url).call<{ counters: Record<string, number> }>({
        method: 'GET',
        path: '/v1/producer',
        resend: 'any',
      }),
    };
    console.log(
      `Baton group commits written again row by row (a compare-and-set lost in the group), ` +
        `warm-up and run: ${status.data.counters.baton_group_commit_retries_total ?? 0}`,
    );
  }
  // The scheduler's idle loops (runner claim, dispatcher, checker) must not load the machine
  // while the other system runs; a profile is written when it exits.
  await scheduler.stop();

  const peers = [
    { system: 'bullmq', label: 'BullMQ', database: BULL_DB, writes: 'each' as const },
    {
      system: 'bullmq-batched',
      label: 'BullMQ, batched writes',
      database: BULL_BATCHED_DB,
      writes: 'batched' as const,
    },
  ];
  for (const peer of peers.filter((p) => SYSTEMS.includes(p.system))) {
    const { db, pipeline } = await startBullPipeline({
      database: peer.database,
      keyPrefix: `${KEY_PREFIX}:${peer.system}`,
      workerUrl: worker.url,
      secret: SECRET,
      concurrency: CONCURRENCY,
      pool: POOL,
      batch: BATCH,
      inFlight: IN_FLIGHT,
      writes: peer.writes,
    });
    const probe: Probe = { apps: { pipeline: pipeline.pid, worker: worker.pid }, ...servers };
    if (WARMUP > 0) {
      const w = await runBull(pipeline, probe, db, 'w-', WARMUP, 0, peer.label);
      console.log(line(`${peer.label} warm-up`, w));
    }
    const m = await runBull(pipeline, probe, db, 'm-', TASKS, WARMUP, peer.label);
    console.log(line(peer.label, m));
    results.push(m);
    await pipeline.stop();
  }

  console.log('');
  console.log(table(results));
  console.log('');
  console.log(sqlTable(results));
  const baton = results.find((r) => r.system === 'Baton');
  const bull = results.find((r) => r.system === 'BullMQ');
  for (const peer of results.filter((r) => r.system.startsWith('BullMQ')))
    if (baton) {
      console.log('');
      console.log(ratios(baton, peer));
    }
  if (baton && bull) {
    const target = baton.tasksPerS >= 1600 && baton.tasksPerS >= bull.tasksPerS;
    console.log(
      `target (>= 1600 tasks/s and >= 1.0x BullMQ): ${target ? 'MET' : 'NOT MET'} ` +
        `(${f0(baton.tasksPerS)} tasks/s, ${f2(baton.tasksPerS / bull.tasksPerS)}x)`,
    );
  }
}

runBench(main, TIME_LIMIT_MS);

/** What the receiver counted of one run's deliveries. */
interface Received {
  /** Each message once, by its webhook-id. */
  ids: Set<string>;
  /** Receive time minus the task's finished_at, ms, once per message. */
  lags: number[];
}

interface BenchReceiver {
  mode: string;
  url: string;
  /** By run: the prefix of the task names (`h1-`). */
  runs: Map<string, Received>;
  hits(): number;
}

/**
 * The webhook receiver of BENCH_WEBHOOK, in this process. `ok`: answers 200 at once, verifies
 * nothing, and counts each message once by the run its task's name says; a status: answers that
 * to every delivery; `hang`: never answers.
 */
async function benchReceiver(mode: string): Promise<BenchReceiver> {
  if (mode !== 'ok' && mode !== 'hang' && !/^[1-5]\d\d$/.test(mode))
    throw new BenchError(`BENCH_WEBHOOK must be ok, an HTTP status or hang, not ${mode}`);
  let hits = 0;
  const runs = new Map<string, Received>();
  const server = createServer((req, res) => {
    hits++;
    if (mode === 'hang') return void req.resume();
    if (mode !== 'ok') {
      req.resume();
      return void res.writeHead(Number(mode)).end('{"error":"dead receiver"}');
    }
    const at = Date.now();
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      res.writeHead(200).end('{}');
      const id = String(req.headers['webhook-id']);
      // Two fields of the task as the body has it, read without parsing the body: the receiver
      // shares the machine with what it measures.
      const body = Buffer.concat(parts).toString('utf8');
      const name = /"task_name":"([^"\\]*)"/.exec(body)?.[1] ?? '';
      const finishedAt = /"finished_at":"([^"]+)"/.exec(body)?.[1];
      const run = name.slice(0, name.indexOf('-') + 1);
      let got = runs.get(run);
      if (!got) runs.set(run, (got = { ids: new Set<string>(), lags: [] }));
      if (got.ids.has(id)) return;
      got.ids.add(id);
      if (finishedAt) got.lags.push(at - Date.parse(finishedAt));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  onCleanup('stop the webhook receiver', async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const { port } = server.address() as AddressInfo;
  return { mode, url: `http://localhost:${port}/hook`, runs, hits: () => hits };
}

/**
 * BENCH_WEBHOOK=ok: runs with a task.finished subscription at the receiver, each followed by one
 * without (the subscription disabled), twice; measured against `first` (the run without before
 * them) and the runs without. Each run with waits for its last delivery before the next starts.
 */
async function webhookRuns(
  scheduler: Child,
  probe: Probe,
  db: Pool,
  receiver: BenchReceiver,
  first: Figures,
  finishedBefore: number,
): Promise<Figures[]> {
  const api = client(scheduler.url);
  const hook = await api.call<{ webhook_id: string }>({
    method: 'POST',
    path: '/v1/webhooks',
    body: { url: receiver.url, events: ['task.finished'] },
    resend: 'any',
  });
  const enable = (enabled: boolean): Promise<unknown> =>
    api.call({
      method: 'PATCH',
      path: `/v1/webhooks/${hook.webhook_id}`,
      body: { enabled },
      resend: 'any',
    });
  console.log('webhook: a subscription to task.finished at a receiver that answers 200 at once');
  const out: Figures[] = [];
  const withHook: Figures[] = [];
  const without = [first];
  const lags: number[] = [];
  let finished = finishedBefore;
  let received = 0;
  for (let turn = 1; turn <= 2; turn++) {
    if (turn > 1) await enable(true);
    const prefix = `h${turn}-`;
    const h = await runBaton(scheduler, probe, db, prefix, TASKS, finished);
    finished += TASKS;
    const got = (): Received => receiver.runs.get(prefix) ?? { ids: new Set(), lags: [] };
    const atLastFinish = got().ids.size;
    const until = Math.min(deadline.at, Date.now() + 300_000);
    while (got().ids.size < TASKS) {
      if (Date.now() > until)
        throw new BenchError(`${prefix}: ${got().ids.size} of ${TASKS} deliveries received`);
      await sleep(100);
    }
    const run = [...got().lags].sort((a, b) => a - b);
    lags.push(...run);
    received += got().ids.size;
    console.log(
      `${line(`Baton, webhook (${turn})`, h)}\n` +
        `  deliveries ${got().ids.size} of ${TASKS} tasks (${atLastFinish} when the last task finished); ` +
        `lag p50/p99/max ${f0(percentile(run, 50))}/${f0(percentile(run, 99))}/${f0(run[run.length - 1])} ms`,
    );
    await enable(false);
    const o = await runBaton(scheduler, probe, db, `o${turn}-`, TASKS, finished);
    finished += TASKS;
    console.log(line(`Baton, no webhook (${turn})`, o));
    withHook.push(h);
    without.push(o);
    out.push(
      { ...h, system: `Baton, webhook (${turn})` },
      { ...o, system: `Baton, no webhook (${turn})` },
    );
  }
  lags.sort((a, b) => a - b);
  const mean = (runs: Figures[]): number => runs.reduce((n, r) => n + r.tasksPerS, 0) / runs.length;
  const share = mean(withHook) / mean(without);
  const p99 = percentile(lags, 99);
  console.log(
    `webhooks: ${received} deliveries received for ${2 * TASKS} tasks finished with the subscription; ` +
      `lag p50/p99/max ${f0(percentile(lags, 50))}/${f0(p99)}/${f0(lags[lags.length - 1])} ms ` +
      `(target p99 <= 2000 ms: ${p99 <= 2000 ? 'MET' : 'NOT MET'}); ` +
      `${f0(mean(withHook))} tasks/s with (runs: ${withHook.map((r) => f0(r.tasksPerS)).join(', ')}) ` +
      `against ${f0(mean(without))} without (runs: ${without.map((r) => f0(r.tasksPerS)).join(', ')}), ` +
      `${f2(share)}x (target >= 0.90: ${share >= 0.9 ? 'MET' : 'NOT MET'}); receiver requests ${receiver.hits()}`,
  );
  return out;
}
