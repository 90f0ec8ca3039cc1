import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
 * can make a case pass or fail. HTTP between them is real (loopback).
 */
export interface InProcessBaton {
  readonly clock: ManualClock;
  readonly api: Api;
  readonly dir: string;
  /** The workers by name: their base URLs. */
  readonly workers: Map<string, string>;
  /** Adds a template worker (registered and heartbeating on the clock). */
  addWorker(name: string, env?: NodeJS.ProcessEnv): Promise<string>;
  /** Moves the clock in steps until the task reaches `status`; returns it. */
  until(taskId: string, status?: string, maxMs?: number): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

export async function startInProcess(env: NodeJS.ProcessEnv = {}): Promise<InProcessBaton> {
  const clock = new ManualClock(Date.now());
  const dir = mkdtempSync(join(tmpdir(), 'baton-in-process-'));
  const config = loadSchedulerConfig({
    ...FAST,
    BATON_DB: 'sqlite',
    BATON_DB_PATH: join(dir, 'baton.sqlite'),
    BATON_QUEUE: 'memory',
    BATON_LOCK: 'local',
    BATON_LOG_LEVEL: 'error',
    ...env,
  });
  const scheduler = await createSchedulerApp(config, false, { clock, docs: false });
  await scheduler.listen(0, '127.0.0.1');
  const api = new Api(await scheduler.getUrl(), ADMIN_KEY);
  const apps: NestFastifyApplication[] = [];
  const registrations: WorkerRegistration[] = [];
  const workers = new Map<string, string>();

  const addWorker = async (name: string, extra: NodeJS.ProcessEnv = {}): Promise<string> => {
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
    await app.listen(0, '127.0.0.1');
    apps.push(app);
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
    registrations.push(registration);
    workers.set(name, url);
    return url;
  };

  return {
    clock,
    api,
    dir,
    workers,
    addWorker,
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
      for (const r of registrations) await r.stop().catch(() => undefined);
      for (const app of apps) await app.close().catch(() => undefined);
      await scheduler.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
