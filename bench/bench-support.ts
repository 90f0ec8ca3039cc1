/**
 * Helpers of the scheduler benchmark (bench/scheduler.bench.ts): child processes, CPU time from
 * /proc, percentiles, a bounded wait, and the per-task figures read back from the database. Both
 * systems under test write the scheduler's schema, so one query reads both.
 */
import { randomBytes } from 'node:crypto';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool, RowDataPacket } from 'mysql2/promise';

/** The admin API key each benchmark's scheduler makes sure of, and its clients call with. */
export const BENCH_ADMIN_KEY = `baton_bench-${randomBytes(16).toString('hex')}`;

/** The repository root, from dist/bench/ (compiled) as from bench/ (ts-node, jest). */
export const ROOT = __dirname.includes(`${join('dist', 'bench')}`)
  ? join(__dirname, '..', '..')
  : join(__dirname, '..');

/** Keeps only the tail of a child's output: a long run must not grow the bench's memory. */
const OUTPUT_TAIL = 64 * 1024;

export interface Child {
  name: string;
  proc: ChildProcess;
  pid: number;
  /** Set once the child printed `listening on http://...` (apps) or is up (pipeline). */
  url: string;
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when it exited. */
  stop(graceMs?: number): Promise<void>;
}

export class BenchError extends Error {}

/**
 * Starts `node <script>` from the repository root and waits for its `listening on` line (or for
 * `ready` on IPC when `ipc` is set). Fails with the child's own output when it exits first.
 */
/**
 * Node flags the scheduler is deployed with (docker/scheduler.Dockerfile, scripts/start.mjs,
 * docs/operations.md): a 32 MB young generation, since nearly everything it allocates per task
 * dies young; measured at about a tenth less scheduler CPU per task than Node's 16 MB. An old
 * generation grown by half of what survived, not up to four times (about 100 MB less RSS after a
 * run). The BullMQ peer gets the same, so neither is tuned alone. BENCH_NODE_ARGS replaces them ("" for none).
 */
export const SERVICE_NODE_ARGS = (
  process.env.BENCH_NODE_ARGS ?? '--max-semi-space-size=32 --heap-growing-percent=50'
)
  .split(' ')
  .filter((a) => a !== '');

/** The template worker as both benchmarks run it: memory store, 512 slots, HMAC, registered. */
export function startBenchWorker(
  workerId: string,
  schedulerUrl: string,
  secret: string,
  nodeArgs: string[] = [],
): Promise<Child> {
  return startChild(
    'worker',
    'dist/apps/worker-template/src/main.js',
    {
      WORKER_PORT: '0',
      WORKER_ID: workerId,
      WORKER_CAPACITY: '512',
      WORKER_STORE: 'memory',
      BATON_SCHEDULER_URL: schedulerUrl,
      BATON_AUTH_MODE: 'hmac',
      BATON_AUTH_SECRET: secret,
    },
    { nodeArgs },
  );
}

export async function startChild(
  name: string,
  script: string,
  env: NodeJS.ProcessEnv,
  opts: { ipc?: boolean; timeoutMs?: number; nodeArgs?: string[] } = {},
): Promise<Child> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const proc = spawn(process.execPath, [...(opts.nodeArgs ?? []), join(ROOT, script)], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: opts.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (c: Buffer): void => {
    out += c.toString();
    if (out.length > OUTPUT_TAIL * 2) out = out.slice(-OUTPUT_TAIL);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new BenchError(`${name} did not start within ${timeoutMs} ms:\n${out}`)),
      timeoutMs,
    );
    const done = (u: string): void => {
      clearTimeout(timer);
      resolve(u);
    };
    if (opts.ipc) {
      proc.on('message', (m: { type?: string }) => {
        if (m.type === 'ready') done('ipc');
      });
    } else {
      proc.stdout?.on('data', () => {
        const m = /listening on (http:\/\/[0-9.:[\]a-z]+)/.exec(out);
        if (m) done(m[1]);
      });
    }
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new BenchError(`${name} exited (${code ?? signal}) before it was up:\n${out}`));
    });
  });
  if (proc.pid === undefined) throw new BenchError(`${name} has no pid`);
  const pid = proc.pid;
  const stop = async (graceMs = 10_000): Promise<void> => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return { name, proc, pid, url, output: () => out, stop };
}

const CLK_TCK = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU time of a process so far, ms (from /proc/<pid>/stat); 0 when it is gone. */
export function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return ((utime + stime) * 1000) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** Machine-wide CPU time so far, ms: busy (all but idle and iowait) and total, from /proc/stat. */
export function machineCpuMs(): { busy: number; total: number } {
  const first = readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const ticks = first.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = ticks.reduce((a, b) => a + b, 0);
  const idle = ticks[3] + ticks[4];
  return { busy: ((total - idle) * 1000) / CLK_TCK, total: (total * 1000) / CLK_TCK };
}

/** The oldest process with exactly this name (the server), or undefined. */
export function pidOf(name: string): number | undefined {
  try {
    const out = execFileSync('pgrep', ['-o', '-x', name]).toString().trim();
    return out ? Number(out) : undefined;
  } catch {
    return undefined;
  }
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs `work` over `items` with at most `inFlight` at once; the first failure rejects. */
export async function inParallel<T>(
  items: readonly T[],
  inFlight: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(inFlight, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      await work(items[i], i);
    }
  });
  await Promise.all(lanes);
}

/** Tasks per status in a database of the scheduler's schema. */
export async function statusCounts(db: Pool): Promise<Record<string, number>> {
  const [rows] = await db.query<RowDataPacket[]>(
    'SELECT status, COUNT(*) AS n FROM baton_task GROUP BY status',
  );
  return Object.fromEntries(rows.map((r) => [String(r.status), Number(r.n)]));
}

/**
 * Waits until `expected` tasks are FINISH, polling every `everyMs`. Fails when a deadline passes
 * or nothing moves for `stallMs`, naming the counts it saw.
 */
export async function waitForFinish(
  db: Pool,
  expected: number,
  deadline: number,
  what: string,
  opts: { everyMs?: number; stallMs?: number } = {},
): Promise<void> {
  const everyMs = opts.everyMs ?? 200;
  const stallMs = opts.stallMs ?? 60_000;
  let last = -1;
  let movedAt = Date.now();
  for (;;) {
    const counts = await statusCounts(db);
    const finished = counts.FINISH ?? 0;
    if (finished >= expected) return;
    const now = Date.now();
    if (finished !== last) {
      last = finished;
      movedAt = now;
    }
    if (now > deadline)
      throw new BenchError(`${what}: time limit reached at ${JSON.stringify(counts)}`);
    if (now - movedAt > stallMs)
      throw new BenchError(
        `${what}: no task finished for ${stallMs} ms: ${JSON.stringify(counts)}`,
      );
    await sleep(everyMs);
  }
}

/** What the rows say about one run's tasks (task_name starting with `prefix`). */
export interface RowFigures {
  tasks: number;
  firstCreatedAt: number;
  lastFinishedAt: number;
  /** due -> first RUNNING event, ms, ascending (due = created_at for these tasks). */
  dueToRun: number[];
  /** created_at -> finished_at, ms, ascending. */
  createToFinish: number[];
  /** Lifecycle events written for these tasks. */
  events: number;
  /** Sum of the tasks' fences: every Baton claim takes a new one (the pipeline leaves it 0). */
  fences: number;
}

export async function rowFigures(db: Pool, prefix: string): Promise<RowFigures> {
  const [rows] = await db.query<RowDataPacket[]>(
    `SELECT t.created_at AS created, t.finished_at AS finished, t.fence AS fence,
            (SELECT MIN(e.created_at) FROM baton_task_event e
              WHERE e.task_id = t.task_id AND e.to_status = 'RUNNING') AS running,
            (SELECT COUNT(*) FROM baton_task_event e WHERE e.task_id = t.task_id) AS events
       FROM baton_task t WHERE t.task_name LIKE ?`,
    [`${prefix}%`],
  );
  const dueToRun: number[] = [];
  const createToFinish: number[] = [];
  let first = Infinity;
  let last = 0;
  let events = 0;
  let fences = 0;
  for (const r of rows) {
    fences += Number(r.fence);
    const created = Number(r.created);
    const finished = Number(r.finished);
    first = Math.min(first, created);
    last = Math.max(last, finished);
    events += Number(r.events);
    if (r.running !== null) dueToRun.push(Number(r.running) - created);
    createToFinish.push(finished - created);
  }
  dueToRun.sort((a, b) => a - b);
  createToFinish.sort((a, b) => a - b);
  return {
    tasks: rows.length,
    firstCreatedAt: first,
    lastFinishedAt: last,
    dueToRun,
    createToFinish,
    events,
    fences,
  };
}

/**
 * MariaDB's global statement and sync counters (SHOW GLOBAL STATUS), for per-task deltas.
 * `Redo_syncs` is not a server name: the redo log's syncs, read from `Innodb_os_log_fsyncs` where
 * the server has it (MySQL, MariaDB before 10.8), else from `Innodb_log_writes` (MariaDB 10.8+
 * dropped the fsync counter; at innodb_flush_log_at_trx_commit=1 each redo write is synced).
 * `Innodb_data_fsyncs` counts the data files' fsyncs (and, on MariaDB 10.8+, the log's too).
 */
export const DB_COUNTERS = [
  'Com_select',
  'Com_insert',
  'Com_update',
  'Com_begin',
  'Com_commit',
  'Com_rollback',
  'Questions',
  'Redo_syncs',
  'Innodb_data_fsyncs',
] as const;
export type DbCounters = Record<(typeof DB_COUNTERS)[number], number>;

export async function dbCounters(db: Pool): Promise<DbCounters> {
  const names = [...DB_COUNTERS, 'Innodb_os_log_fsyncs', 'Innodb_log_writes'];
  const [rows] = await db.query<RowDataPacket[]>(
    `SHOW GLOBAL STATUS WHERE Variable_name IN (${names.map(() => '?').join(', ')})`,
    names,
  );
  const byName = new Map(rows.map((r) => [String(r.Variable_name), Number(r.Value)]));
  byName.set(
    'Redo_syncs',
    byName.get('Innodb_os_log_fsyncs') ?? byName.get('Innodb_log_writes') ?? Number.NaN,
  );
  return Object.fromEntries(DB_COUNTERS.map((k) => [k, byName.get(k) ?? 0])) as DbCounters;
}
