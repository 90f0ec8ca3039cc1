import { ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..');

/** A real app process started for a test. */
export interface RunningProcess {
  url: string;
  proc: ChildProcess;
  output: () => string;
  /** SIGTERM and wait for the exit. */
  stop: () => Promise<void>;
  /** SIGKILL: a crash. */
  kill9: () => Promise<void>;
}

/**
 * How long a process may take to start listening: generous, since a start is not what these tests
 * measure, and on a box loaded by the other lanes a scheduler's start (1.5 s of CPU) took over 20 s.
 */
const START_DEADLINE_MS = 90_000;

/**
 * Starts `node <script>` and resolves once it prints `listening on http://...`. Fails with the
 * process's own output when it exits or stays silent, so a broken start is easy to read.
 */
export async function startProcess(
  script: string,
  env: NodeJS.ProcessEnv,
  timeoutMs = START_DEADLINE_MS,
): Promise<RunningProcess> {
  return startCommand(process.execPath, script, env, timeoutMs);
}

/** Like startProcess, with another interpreter than node (`python3 <script>`, say). */
export async function startCommand(
  command: string,
  script: string,
  env: NodeJS.ProcessEnv,
  timeoutMs = START_DEADLINE_MS,
): Promise<RunningProcess> {
  const file = join(ROOT, script);
  if (!existsSync(file))
    throw new Error(`${script} is missing: run \`npm run build\` first (npm test does)`);
  const proc = spawn(command, [file], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  keepOutput(proc, env);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left behind: a start that comes late would hold a port, a database pool and the
      // test runner (its open handles) for the rest of the run.
      proc.kill('SIGKILL');
      reject(new Error(`${script} did not start within ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const onData = (): void => {
      const m = /listening on (http:\/\/[0-9.:[\]a-z]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    proc.stdout?.on('data', onData);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code} before listening:\n${out}`));
    });
    // No such interpreter (python3 not installed, say): a loud failure, never a skip.
    proc.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`${command} ${script} could not be started: ${err.message}`));
    });
  });

  const end = async (signal: NodeJS.Signals): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    await exited;
  };
  return { url, proc, output: () => out, stop: () => end('SIGTERM'), kill9: () => end('SIGKILL') };
}

export const WORKER_MAIN = 'dist/apps/worker-template/src/main.js';
export const PLAIN_WORKER = 'test/fixtures/plain-worker/plain-worker.js';
export const PYTHON_WORKER = 'examples/python-worker/worker.py';

/** The Python example worker (`python3`, standard library only), started like startProcess. */
export function startPythonWorker(env: NodeJS.ProcessEnv): Promise<RunningProcess> {
  return startCommand('python3', PYTHON_WORKER, { PYTHONUNBUFFERED: '1', ...env });
}
export const CONTRACT_CLI = 'dist/libs/task-contract/src/conformance/cli.js';

/**
 * With `BATON_TEST_OUTPUT_DIR` set, every process a test starts also writes its output to a file
 * there (`<instance or worker id>-<pid>.log`): a killed instance's log outlives it, to be read
 * after a failure (how `chaos` and the crash tests are debugged).
 */
function keepOutput(proc: ChildProcess, env: NodeJS.ProcessEnv): void {
  const dir = process.env.BATON_TEST_OUTPUT_DIR;
  if (!dir || proc.pid === undefined) return;
  mkdirSync(dir, { recursive: true });
  const name = env.BATON_INSTANCE_ID ?? env.WORKER_ID ?? 'process';
  const file = createWriteStream(join(dir, `${name}-${proc.pid}.log`));
  proc.stdout?.pipe(file, { end: false });
  proc.stderr?.pipe(file, { end: false });
  proc.once('exit', () => setImmediate(() => file.end()));
}

/** Runs a node script to its end and returns its exit code and output. */
export function runScript(
  script: string,
  args: string[],
  timeoutMs = 60_000,
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [join(ROOT, script), ...args], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: '1', ...env },
    });
    let out = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${script} ${args.join(' ')} ran over ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

/** Only for the waits below: a test waits for a state (eventually, holds) or a scenario's step. */
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** How a poll's time passes: what it reads as now, and what it does between two probes. */
export interface PollTime {
  now(): number;
  pass(): Promise<void>;
  /** Said after the timeout in a failure, e.g. " of clock time". */
  unit?: string;
}

/**
 * Probes until `probe` returns a value that is not undefined, or fails once `timeoutMs` of
 * `time` has passed: the one poll loop behind `eventually` (real time) and `manualTime` (a
 * ManualClock moved between probes, test/support/waits.ts).
 */
export async function pollUntil<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  what: string,
  time: PollTime,
): Promise<T> {
  const deadline = time.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (time.now() >= deadline)
      throw new Error(
        `${what} not reached within ${timeoutMs} ms${time.unit ?? ''}${last ? `: ${String(last)}` : ''}`,
      );
    await time.pass();
  }
}

/**
 * Polls `probe` (every `everyMs`) until it returns a value that is not undefined, or fails after
 * `timeoutMs`: how an end-to-end test waits, for a state and never for a time.
 */
export function eventually<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  what = 'condition',
  everyMs = 50,
): Promise<T> {
  return pollUntil(probe, timeoutMs, what, { now: Date.now, pass: () => sleep(everyMs) });
}

/**
 * Asserts that `check` stays true for `ms` (polled every 50 ms, and once at the end): how an
 * end-to-end test says that nothing more happens (no second delivery, no fire while disabled, a
 * run standing still). Fails at the first poll where it does not hold, naming `what`.
 */
export async function holds(
  check: () => Promise<boolean> | boolean,
  ms: number,
  what: string,
): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (!(await check()))
      throw new Error(`${what} stopped holding after ${ms - (end - Date.now())} ms`);
    const left = end - Date.now();
    if (left <= 0) return;
    await sleep(Math.min(50, left));
  }
}

/**
 * Polls `read` until it has answered the same for `quietMs`, and answers that value: a count that
 * has stopped moving (the passes in flight when a timer was disabled have ended; a paused run's
 * last tick has landed). `holds` then says it stays so.
 */
export async function steady<T>(
  read: () => Promise<T>,
  what: string,
  quietMs = 500,
  timeoutMs = 20_000,
): Promise<T> {
  let last: string | undefined;
  let since = 0;
  return eventually(
    async () => {
      const value = await read();
      const seen = JSON.stringify(value);
      if (seen !== last) {
        last = seen;
        since = Date.now();
        return undefined;
      }
      return Date.now() - since >= quietMs ? value : undefined;
    },
    timeoutMs,
    what,
  );
}

/**
 * A scenario's schedule, for end-to-end tests that play load and faults on a timeline (chaos,
 * failovers, rolling restarts): `at(ms)` resolves `ms` after the schedule began, at once when that
 * is past; `elapsed()` is the time since it began. What such a test asserts is a final state, not
 * how long anything took.
 */
export interface Schedule {
  readonly startedAt: number;
  /** `ms` after the schedule began (at once when that is past). */
  at(ms: number): Promise<void>;
  /** The scenario's next step, `ms` from now (a fault's duration, the gap between kills). */
  after(ms: number): Promise<void>;
  elapsed(): number;
}

export function schedule(): Schedule {
  const startedAt = Date.now();
  return {
    startedAt,
    at: (ms) => sleep(Math.max(0, startedAt + ms - Date.now())),
    after: (ms) => sleep(ms),
    elapsed: () => Date.now() - startedAt,
  };
}

/** A TCP port free on loopback now (for a process that must come back on the same port). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}
