import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger, LoggerService } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { TaskWorkerService, WorkerRegistration } from '@baton/task-contract';
import { ManualClock } from '@baton/time';
import { createSchedulerApp } from '../../apps/scheduler/src/bootstrap';
import { loadSchedulerConfig } from '../../apps/scheduler/src/config';
import { createWorkerApp } from '../../apps/worker-template/src/bootstrap';
import { loadWorkerConfig } from '../../apps/worker-template/src/config/worker.config';
import { ADMIN_KEY, Api, FAST, SECRET } from './baton';

/**
 * A scheduler and template workers in this test's own process, on the embedded defaults (SQLite,
 * memory queue, local locks), all on one ManualClock: time moves only when the test moves it, so
 * a backoff of a minute or a deadline of an hour costs no waiting, and no speed of the machine
 * can make a case pass or fail. HTTP between them is real (loopback). The scheduler can be stopped
 * and a new one started on the same database file, port and clock (an outage of every instance),
 * while the workers stay up.
 */
export interface InProcessBaton {
  readonly clock: ManualClock;
  readonly api: Api;
  readonly dir: string;
  /** The workers by name: their base URLs. */
  readonly workers: Map<string, string>;
  /** Adds a template worker (registered and heartbeating on the clock). */
  addWorker(name: string, env?: NodeJS.ProcessEnv): Promise<string>;
  /**
   * A worker that loses what it kept in memory: closed (its runs stopped, without a word to the
   * scheduler when its callbacks are off) and built again on the same port, from the same
   * environment with `env` over it. Answers its URL.
   */
  restartWorker(name: string, env?: NodeJS.ProcessEnv): Promise<string>;
  /** Closes a worker for good (its registration stops heartbeating; it is not deregistered). */
  removeWorker(name: string): Promise<void>;
  /**
   * The warnings and errors the apps logged through Nest's logger (the logger is the process's,
   * so the workers' are here too), one line per entry, as `LEVEL context: message`.
   */
  output(): string;
  /**
   * Closes the scheduler app (every instance down); the workers stay up, and the clock does not
   * move. The API answers nothing until `startScheduler`.
   */
  stopScheduler(): Promise<void>;
  /**
   * Builds a new scheduler app on the same database file, port (so `api` and the workers'
   * registrations still point at it) and clock, from the first one's environment with `env` over
   * it.
   */
  startScheduler(env?: NodeJS.ProcessEnv): Promise<void>;
  /** Moves the clock in steps until the task reaches `status`; returns it. */
  until(taskId: string, status?: string, maxMs?: number): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

/** Baton in-process with one worker (`w1`), once the scheduler lists it. */
export async function startWithWorker(env: NodeJS.ProcessEnv = {}): Promise<InProcessBaton> {
  const baton = await startInProcess(env);
  await baton.addWorker('w1');
  await baton.clock.until(
    async () => (await baton.api.call<unknown[]>('GET', '/v1/workers')).data.length === 1,
    'the worker registered',
  );
  return baton;
}

export async function startInProcess(env: NodeJS.ProcessEnv = {}): Promise<InProcessBaton> {
  const clock = new ManualClock(Date.now());
  const dir = mkdtempSync(join(tmpdir(), 'baton-in-process-'));
  const schedulerEnv: NodeJS.ProcessEnv = {
    ...FAST,
    BATON_DB: 'sqlite',
    BATON_DB_PATH: join(dir, 'baton.sqlite'),
    BATON_QUEUE: 'memory',
    BATON_LOCK: 'local',
    BATON_LOG_LEVEL: 'error',
    // A call to a worker is real I/O, while the clock moves as fast as the test's probes: on a
    // loaded box a call of 100 ms could pass a 2 s deadline of clock time. Call deadlines are
    // not what these tests are about; a test that is says so in `env`.
    BATON_CALL_TIMEOUT_MS: '60000',
    ...env,
  };
  // Nest's logger is one per process: an app built with `logger: false` (every worker here)
  // switches it off for all, so it is set again after each app is built. Only warnings and errors
  // are kept (what tests look for), so a long run does not keep every debug line.
  const logged: string[] = [];
  const capture =
    (level: string) =>
    (message: unknown, ...rest: unknown[]) => {
      const context = rest.length > 0 ? String(rest[rest.length - 1]) : '';
      logged.push(`${level} ${context}: ${String(message)}`);
    };
  const ignore = (): void => undefined;
  const logger: LoggerService = {
    log: ignore,
    error: capture('ERROR'),
    warn: capture('WARN'),
    debug: ignore,
    verbose: ignore,
  };
  const build = async (extra: NodeJS.ProcessEnv = {}): Promise<NestFastifyApplication> => {
    const app = await createSchedulerApp(
      loadSchedulerConfig({ ...schedulerEnv, ...extra }),
      false,
      { clock, docs: false },
    );
    app.useLogger(logger);
    return app;
  };
  let scheduler: NestFastifyApplication | undefined = await build();
  await scheduler.listen(0, '127.0.0.1');
  const api = new Api(await scheduler.getUrl(), ADMIN_KEY);
  // A scheduler started again listens where the first one did.
  const port = Number(new URL(api.base).port);
  const running = new Map<
    string,
    { app: NestFastifyApplication; registration: WorkerRegistration; env: NodeJS.ProcessEnv }
  >();
  const workers = new Map<string, string>();

  const addWorker = async (name: string, extra: NodeJS.ProcessEnv = {}): Promise<string> => {
    if (running.has(name)) throw new Error(`worker ${name} is running already`);
    const wc = loadWorkerConfig({
      WORKER_PORT: '0',
      WORKER_ID: name,
      BATON_AUTH_MODE: 'hmac',
      BATON_AUTH_SECRET: SECRET,
      BATON_SCHEDULER_URL: api.base,
      WORKER_HEARTBEAT_MS: '300',
      WORKER_ROLLBACK_DIR: join(dir, 'rollback'),
      ...extra,
    });
    const app = await createWorkerApp(wc, false, undefined, clock);
    Logger.overrideLogger(logger);
    try {
      await app.listen(wc.port, '127.0.0.1');
    } catch (err) {
      // Its port taken (a restart's, meanwhile): nothing of it is left running.
      await app.close().catch(() => undefined);
      workers.delete(name);
      throw err;
    }
    const url = await app.getUrl();
    const registration = new WorkerRegistration({
      schedulerUrl: api.base,
      auth: wc.auth,
      workerId: wc.workerId,
      publicUrl: url,
      version: wc.version,
      capacity: wc.capacity,
      heartbeatMs: wc.heartbeatMs,
      taskTypes: app.get(TaskWorkerService).describe(),
      clock,
    });
    await registration.start();
    running.set(name, { app, registration, env: extra });
    workers.set(name, url);
    return url;
  };

  const closeWorker = async (name: string): Promise<void> => {
    const w = running.get(name);
    running.delete(name);
    await w?.registration.stop().catch(() => undefined);
    await w?.app.close().catch(() => undefined);
  };

  const restartWorker = async (name: string, extra: NodeJS.ProcessEnv = {}): Promise<string> => {
    const w = running.get(name);
    if (!w) throw new Error(`no worker ${name}`);
    const port = new URL(workers.get(name) as string).port;
    await closeWorker(name);
    return addWorker(name, { ...w.env, ...extra, WORKER_PORT: port });
  };

  const stopScheduler = async (): Promise<void> => {
    const app = scheduler;
    scheduler = undefined;
    await app?.close();
  };

  const startScheduler = async (extra: NodeJS.ProcessEnv = {}): Promise<void> => {
    if (scheduler) throw new Error('the scheduler is running: stop it first');
    const app = await build(extra);
    try {
      await app.listen(port, '127.0.0.1');
    } catch (err) {
      await app.close().catch(() => undefined);
      throw err;
    }
    scheduler = app;
  };

  return {
    clock,
    api,
    dir,
    workers,
    addWorker,
    restartWorker,
    async removeWorker(name) {
      await closeWorker(name);
      workers.delete(name);
    },
    output: () => logged.join('\n'),
    stopScheduler,
    startScheduler,
    async until(taskId, status = 'FINISH', maxMs = 600_000) {
      let last: Record<string, unknown> = {};
      try {
        await clock.until(
          async () => {
            last = await api.task(taskId);
            return last.task_status === status;
          },
          `task ${taskId} reaching ${status}`,
          { stepMs: 50, maxMs },
        );
      } catch (err) {
        const events = await api.events(taskId).catch(() => []);
        const story = events.map((e) => `${e.from} -> ${e.to}: ${e.reason}`).join('\n  ');
        throw new Error(
          `${(err as Error).message}; it is ${String(last.task_status)}:\n  ${story}`,
        );
      }
      return last;
    },
    async stop() {
      for (const name of [...running.keys()]) await closeWorker(name);
      await stopScheduler();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
