/**
 * The plain BullMQ pipeline the scheduler benchmark compares Baton with, run as its own process
 * (so its CPU is measured like the scheduler's). It does per task what Baton does for a sync
 * `demo.echo` task, minus the scheduler's own machinery:
 *
 * - enqueue: the task row + its INIT event in one transaction per batch (as Baton's batch create),
 *   then `addBulk`;
 * - process (one BullMQ job): worker `create` -> CREATE (row + event, one transaction) -> attempt
 *   row -> RUNNING (row + event) -> worker `run` -> SUCCESS (row + event) -> attempt end ->
 *   FINISH (row + event). The same HTTP calls through the repo's WorkerClient (HMAC, fence 1),
 *   the same rows, compare-and-set on version like Baton's;
 * - flow (bench/topology.bench.ts): the rows of every task of a flow (bench/bullmq-flows.ts), in
 *   batches as above, then the flow in one `FlowProducer.add`; each of its jobs is processed as
 *   above by the same worker, a parent once its children completed.
 *
 * BENCH_BULL_WRITES=batched is the second peer, as a careful BullMQ user would write it: the
 * jobs' writes are gathered while earlier ones are on their way (as Baton's group commit does)
 * and go as one multi-row statement per kind of write, one transaction per group. The job's
 * lock stands for the compare-and-set (BullMQ runs a job once at a time), so a group's updates
 * that set the same columns are one `UPDATE ... CASE task_id ...`.
 *
 * Driven over IPC by bench/scheduler.bench.ts, bench/scale.bench.ts and bench/topology.bench.ts:
 * `ready` -> `run` -> `created` (or `flow` -> `flowed`) ... `stop`.
 * Environment: BENCH_MYSQL_DATABASE, BENCH_BULL_PREFIX, BENCH_WORKER_URL, BATON_AUTH_SECRET,
 * BENCH_CONCURRENCY, BENCH_POOL, BENCH_BATCH, BENCH_CREATE_IN_FLIGHT, BENCH_BULL_WRITES (`each`,
 * the default, or `batched`).
 */
import { FlowProducer, Queue, Worker } from 'bullmq';
import { createPool, Pool, PoolConnection, ResultSetHeader } from 'mysql2/promise';
import { monotonicFactory } from 'ulid';
import { WorkerClient } from '@baton/task-contract';
import { inParallel } from './bench-support';
import { buildFlow, FlowShape } from './bullmq-flows';

/** `at`: the jobs are delayed jobs due at that instant (epoch ms), as tasks with a start_time. */
export type PipelineCommand =
  | { type: 'run'; prefix: string; tasks: number; at?: number }
  | { type: 'flow'; shape: FlowShape; prefix: string; nodes: number }
  | { type: 'stop' };
/** `flowed`: the flow is added; `last` is the task id of the job that ends it. */
export type PipelineReply =
  | { type: 'ready' }
  | { type: 'created'; startedAt: number; endedAt: number }
  | { type: 'flowed'; startedAt: number; endedAt: number; last: string }
  | { type: 'error'; message: string };

/** The data of one job: the task it is. */
export interface JobData {
  taskId: string;
  name: string;
  params: Record<string, unknown>;
}

const env = process.env;
const QUEUE = 'bench-echo';
const TYPE = 'demo.echo';
const ACTOR = 'bullmq:bench';
const workerUrl = need('BENCH_WORKER_URL');
const concurrency = Number(env.BENCH_CONCURRENCY ?? 128);
const batch = Number(env.BENCH_BATCH ?? 500);
const inFlight = Number(env.BENCH_CREATE_IN_FLIGHT ?? 4);
const connection = { host: '127.0.0.1', port: 6379, maxRetriesPerRequest: null };
const prefix = need('BENCH_BULL_PREFIX');
const WORKER_ID = `bench-worker`;
const BATCHED = env.BENCH_BULL_WRITES === 'batched';

function need(name: string): string {
  const v = env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
}

function send(reply: PipelineReply): void {
  process.send?.(reply);
}

const db: Pool = createPool({
  host: '127.0.0.1',
  port: 3306,
  user: 'root',
  password: '',
  database: need('BENCH_MYSQL_DATABASE'),
  connectionLimit: Number(env.BENCH_POOL ?? 20),
  supportBigNumbers: true,
  bigNumberStrings: false,
  charset: 'utf8mb4',
});
// The scheduler's WorkerClient with the scheduler's settings (timeout as BATON_CALL_TIMEOUT_MS).
const client = new WorkerClient({ auth: { mode: 'hmac', secret: need('BATON_AUTH_SECRET') } });
const nextId = monotonicFactory();

async function tx(work: (c: PoolConnection) => Promise<void>): Promise<void> {
  const c = await db.getConnection();
  try {
    await c.query('START TRANSACTION');
    await work(c);
    await c.query('COMMIT');
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    c.release();
  }
}

const TASK_COLUMNS =
  'task_id, task_type, task_name, tenant, labels, status, version, attempt, priority, blocking, ' +
  'repetition, params, lock_keys, requested_url, worker_id, worker_url, parent_task_id, ' +
  'control_task_id, start_time, deadline_second, lock_timeout, max_retry, idempotency_key, ' +
  'callback_url, due_at, owner, lease_until, fence, result, error, progress, heartbeat_at, ' +
  'outcome, paused_from, cancel_requested, pending_action, created_at, updated_at, started_at, ' +
  'finished_at';

/** The rows Baton's batch create writes: the tasks and their INIT events, all or none. */
async function insertBatch(jobs: readonly JobData[], now: number): Promise<void> {
  await tx(async (c) => {
    await c.query(`INSERT INTO baton_task (${TASK_COLUMNS}) VALUES ?`, [
      jobs.map((j) => [
        j.taskId,
        TYPE,
        j.name,
        'default',
        '{}',
        'INIT',
        0,
        0,
        5,
        'sync',
        'simple',
        JSON.stringify(j.params),
        '[]',
        null,
        null,
        null,
        null,
        null,
        null,
        null,
        null,
        -1,
        null,
        null,
        now,
        null,
        null,
        0,
        null,
        null,
        null,
        null,
        null,
        null,
        false,
        null,
        now,
        now,
        null,
        null,
      ]),
    ]);
    await c.query(
      'INSERT INTO baton_task_event (task_id, from_status, to_status, reason, actor, attempt, created_at) VALUES ?',
      [jobs.map((j) => [j.taskId, null, 'INIT', 'created (batch)', ACTOR, 0, now])],
    );
  });
}

/** A write waiting for its group: an update of a row's columns, or a row to insert. */
type Update = { kind: 'task' | 'attempt'; taskId: string; set: Record<string, unknown> };
type Write = Update | { kind: 'event' | 'attempt-start'; row: unknown[] };

const EVENT_COLUMNS = 'task_id, from_status, to_status, reason, actor, attempt, created_at';
const ATTEMPT_COLUMNS = 'task_id, attempt, worker_id, worker_url, fence, started_at';
/**
 * Most writes in a group, and groups written at once: one. Two groups at once deadlocked each
 * other (an UPDATE with a long IN list may scan and lock the whole small table); retried, they
 * met again.
 */
const GROUP_MAX = 512;
const WRITERS = 1;

/**
 * The batched peer's writer: writes that come while a group is being written wait for the next,
 * which takes them all (up to GROUP_MAX); a lone write goes at once.
 */
class GroupWriter {
  private pending: { writes: Write[]; done: () => void; fail: (e: unknown) => void }[] = [];
  private writers = 0;

  write(...writes: Write[]): Promise<void> {
    return new Promise((done, fail) => {
      this.pending.push({ writes, done, fail });
      this.pump();
    });
  }

  private pump(): void {
    while (this.writers < WRITERS && this.pending.length > 0) {
      const group = this.pending.splice(0, GROUP_MAX);
      this.writers++;
      void tx((c) =>
        this.flush(
          c,
          group.flatMap((g) => g.writes),
        ),
      )
        .then(
          () => group.forEach((g) => g.done()),
          (err: unknown) => group.forEach((g) => g.fail(err)),
        )
        .finally(() => {
          this.writers--;
          this.pump();
        });
    }
  }

  /** A group that met a deadlock with another (their rows' index pages) is written again. */
  private async flushWithRetry(writes: Write[]): Promise<void> {
    for (let tries = 1; ; tries++) {
      try {
        return await tx((c) => this.flush(c, writes));
      } catch (err) {
        const errno = (err as { errno?: number }).errno;
        if (tries >= 5 || (errno !== 1213 && errno !== 1205)) {
          console.error(`group of ${writes.length} writes failed: ${String(err)}`);
          throw err;
        }
      }
    }
  }

  /**
   * One statement per kind of write, in one transaction: the inserts as one multi-row INSERT,
   * the updates of the rows that set the same columns as one `UPDATE ... SET c = CASE task_id
   * WHEN ... END ... WHERE task_id IN (...)`.
   */
  private async flush(c: PoolConnection, writes: Write[]): Promise<void> {
    const updates = new Map<string, Update[]>();
    const inserts = { event: [] as unknown[][], 'attempt-start': [] as unknown[][] };
    for (const w of writes) {
      if ('row' in w) inserts[w.kind].push(w.row);
      else {
        const key = `${w.kind}:${Object.keys(w.set).join(',')}`;
        updates.set(key, [...(updates.get(key) ?? []), w]);
      }
    }
    for (const [key, rows] of updates) {
      const [kind, list] = key.split(':');
      const cols = list.split(',');
      const args: unknown[] = [];
      const sets = cols.map((col) => {
        for (const r of rows) args.push(r.taskId, r.set[col]);
        return `${col} = CASE task_id ${rows.map(() => 'WHEN ? THEN ?').join(' ')} END`;
      });
      const table = kind === 'task' ? 'baton_task' : 'baton_task_attempt';
      const where = kind === 'task' ? '' : 'attempt = 1 AND ';
      await c.query(`UPDATE ${table} SET ${sets.join(', ')} WHERE ${where}task_id IN (?)`, [
        ...args,
        rows.map((r) => r.taskId),
      ]);
    }
    if (inserts['attempt-start'].length)
      await c.query(`INSERT INTO baton_task_attempt (${ATTEMPT_COLUMNS}) VALUES ?`, [
        inserts['attempt-start'],
      ]);
    if (inserts.event.length)
      await c.query(`INSERT INTO baton_task_event (${EVENT_COLUMNS}) VALUES ?`, [inserts.event]);
  }
}
const groups = new GroupWriter();

/** One transition: compare-and-set on version, plus its lifecycle event, in one transaction. */
async function transition(
  taskId: string,
  version: number,
  from: string,
  to: string,
  set: Record<string, unknown>,
  reason: string,
): Promise<number> {
  const now = Date.now();
  const cols = { ...set, status: to, version: version + 1, updated_at: now };
  if (BATCHED) {
    await groups.write(
      { kind: 'task', taskId, set: cols },
      { kind: 'event', row: [taskId, from, to, reason, ACTOR, 1, now] },
    );
    return version + 1;
  }
  await tx(async (c) => {
    const [res] = await c.query<ResultSetHeader>(
      `UPDATE baton_task SET ${Object.keys(cols)
        .map((k) => `${k} = ?`)
        .join(', ')} WHERE task_id = ? AND version = ?`,
      [...Object.values(cols), taskId, version],
    );
    if (res.affectedRows !== 1) throw new Error(`task ${taskId} changed under us`);
    await c.query(
      'INSERT INTO baton_task_event (task_id, from_status, to_status, reason, actor, attempt, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [taskId, from, to, reason, ACTOR, 1, now],
    );
  });
  return version + 1;
}

async function processTask(data: JobData): Promise<void> {
  const { taskId } = data;
  const opts = { fence: 1, requestId: `${taskId}/1` };
  await client.create(
    workerUrl,
    TYPE,
    {
      task_id: taskId,
      attempt: 1,
      create_info: { task_type: TYPE, task_name: data.name, important_level: 5 },
      process_arg: { max_retry: 0 },
      params: data.params,
      lock_keys: [],
    },
    opts,
  );
  let v = await transition(
    taskId,
    0,
    'INIT',
    'CREATE',
    { attempt: 1, worker_id: WORKER_ID, worker_url: workerUrl, error: null, result: null },
    `worker ${WORKER_ID} accepted attempt 1`,
  );
  const started = Date.now();
  if (BATCHED) {
    const row = [taskId, 1, WORKER_ID, workerUrl, 1, started];
    await groups.write({ kind: 'attempt-start', row });
  } else
    await db.query(
      'INSERT INTO baton_task_attempt (task_id, attempt, worker_id, worker_url, fence, started_at) VALUES (?, ?, ?, ?, ?, ?)',
      [taskId, 1, WORKER_ID, workerUrl, 1, started],
    );
  v = await transition(
    taskId,
    v,
    'CREATE',
    'RUNNING',
    { started_at: Date.now(), heartbeat_at: Date.now() },
    'run',
  );
  const view = await client.run(workerUrl, TYPE, taskId, { ...opts, timeoutMs: 300_000 });
  if (view.task_status !== 'SUCCESS') throw new Error(`task ${taskId}: ${view.task_status}`);
  v = await transition(
    taskId,
    v,
    'RUNNING',
    'SUCCESS',
    {
      result: JSON.stringify(view.result),
      error: null,
      progress: JSON.stringify({ percent: 100, step: null, message: null }),
    },
    'run succeeded',
  );
  if (BATCHED) {
    const set = { ended_at: Date.now(), outcome: 'SUCCESS', error: null };
    await groups.write({ kind: 'attempt', taskId, set });
  } else
    await db.query(
      'UPDATE baton_task_attempt SET ended_at = ?, outcome = ?, error = ? WHERE task_id = ? AND attempt = ?',
      [Date.now(), 'SUCCESS', null, taskId, 1],
    );
  await transition(
    taskId,
    v,
    'SUCCESS',
    'FINISH',
    { outcome: 'SUCCESS', finished_at: Date.now(), due_at: null, owner: null, lease_until: null },
    'cleaned up (SUCCESS)',
  );
}

async function main(): Promise<void> {
  const queue = new Queue<JobData>(QUEUE, { connection, prefix });
  // A tuned production setup: completed jobs removed at once, failed ones kept for inspection.
  const worker = new Worker<JobData>(QUEUE, (job) => processTask(job.data), {
    connection,
    prefix,
    concurrency,
    removeOnComplete: { count: 0 },
    removeOnFail: { count: 1000 },
  });
  worker.on('failed', (job, err) => console.error(`job ${job?.id ?? '?'} failed: ${err.message}`));
  await worker.waitUntilReady();
  await queue.waitUntilReady();
  const flows = new FlowProducer({ connection, prefix });
  await flows.waitUntilReady();

  const run = async (runPrefix: string, tasks: number, at?: number): Promise<void> => {
    const batches: JobData[][] = [];
    for (let i = 0; i < tasks; i += batch) {
      const size = Math.min(batch, tasks - i);
      batches.push(
        Array.from({ length: size }, (_, k) => ({
          taskId: nextId(),
          name: `${runPrefix}${i + k}`,
          params: { i: i + k },
        })),
      );
    }
    const startedAt = Date.now();
    await inParallel(batches, inFlight, async (jobs) => {
      await insertBatch(jobs, Date.now());
      await queue.addBulk(
        jobs.map((j) => ({
          name: TYPE,
          data: j,
          opts: {
            jobId: j.taskId,
            attempts: 1,
            ...(at !== undefined ? { delay: Math.max(0, at - Date.now()) } : {}),
          },
        })),
      );
    });
    send({ type: 'created', startedAt, endedAt: Date.now() });
  };

  const flow = async (shape: FlowShape, flowPrefix: string, nodes: number): Promise<void> => {
    const built = buildFlow(shape, QUEUE, flowPrefix, nodes, nextId);
    const batches: JobData[][] = [];
    for (let i = 0; i < built.tasks.length; i += batch)
      batches.push(built.tasks.slice(i, i + batch));
    const startedAt = Date.now();
    await inParallel(batches, inFlight, (jobs) => insertBatch(jobs, Date.now()));
    await flows.add(built.flow);
    send({ type: 'flowed', startedAt, endedAt: Date.now(), last: built.last.taskId });
  };

  const failed = (err: unknown): void =>
    send({ type: 'error', message: err instanceof Error ? err.message : String(err) });
  process.on('message', (cmd: PipelineCommand) => {
    if (cmd.type === 'run') {
      run(cmd.prefix, cmd.tasks, cmd.at).catch(failed);
    } else if (cmd.type === 'flow') {
      flow(cmd.shape, cmd.prefix, cmd.nodes).catch(failed);
    } else {
      void (async () => {
        await worker.close();
        await flows.close();
        await queue.close();
        await client.close();
        await db.end();
        process.exit(0);
      })();
    }
  });
  process.on('SIGTERM', () => process.exit(0));
  send({ type: 'ready' });
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
