import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { CreateTask, SchedulerClient } from '@baton/scheduler-client';
import { createConnection } from 'mysql2/promise';
import Redis from 'ioredis';
import { RunningProcess, WORKER_MAIN, eventually, freePort, startProcess } from './processes';

export const SCHEDULER_MAIN = 'dist/apps/scheduler/src/main.js';

/** The backends one e2e suite runs against. */
export interface Backend {
  name: string;
  env: NodeJS.ProcessEnv;
  cleanup(): Promise<void>;
}

/** SQLite file + in-memory queue + local locks: the embedded default. */
export function embeddedBackend(): Backend {
  const dir = mkdtempSync(join(tmpdir(), 'baton-e2e-db-'));
  return {
    name: 'sqlite + memory',
    env: {
      BATON_DB: 'sqlite',
      BATON_DB_PATH: join(dir, 'baton.sqlite'),
      BATON_QUEUE: 'memory',
      BATON_LOCK: 'local',
    },
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** ZooKeeper answers on 2181, or the test fails saying how to start it. */
export function zooKeeperAnswers(): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(2181, '127.0.0.1');
    const fail = (why: string): void => {
      socket.destroy();
      reject(
        new Error(
          `ZooKeeper is not reachable on 127.0.0.1:2181 (${why}): start it with bash scripts/services.sh`,
        ),
      );
    };
    socket.setTimeout(5000, () => fail('no answer within 5 s'));
    socket.once('connect', () => {
      socket.end();
      resolve();
    });
    socket.once('error', (err) => fail(err.message));
  });
}

/** A fresh MariaDB database + Redis queue and locks under a fresh prefix. Fails loudly when a server is down. */
export async function productionBackend(): Promise<Backend> {
  const id = randomBytes(4).toString('hex');
  const database = `baton_e2e_${id}`;
  let conn;
  try {
    conn = await createConnection({
      host: '127.0.0.1',
      port: 3306,
      user: 'root',
      password: '',
      connectTimeout: 3000,
    });
  } catch (err) {
    throw new Error(
      `MariaDB at 127.0.0.1:3306 is not reachable (${(err as Error).message}); start it with \`bash scripts/services.sh\``,
    );
  }
  await conn.query(`CREATE DATABASE ${database}`);
  await conn.end();
  const redis = new Redis({
    host: '127.0.0.1',
    port: 6379,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
  });
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    throw new Error(
      `Redis at 127.0.0.1:6379 is not reachable (${(err as Error).message}); start it with \`bash scripts/services.sh\``,
    );
  }
  return {
    name: 'mariadb + redis',
    env: {
      BATON_DB: 'mysql',
      BATON_MYSQL_DATABASE: database,
      BATON_DB_MIGRATE: 'true',
      BATON_QUEUE: 'redis',
      BATON_QUEUE_PREFIX: `e2e:${id}:q`,
      BATON_LOCK: 'redis',
      BATON_LOCK_PREFIX: `e2e:${id}:lock:`,
    },
    cleanup: async () => {
      const c = await createConnection({
        host: '127.0.0.1',
        port: 3306,
        user: 'root',
        password: '',
      });
      await c.query(`DROP DATABASE IF EXISTS ${database}`);
      await c.end();
      const keys = await redis.keys(`*e2e:${id}:*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    },
  };
}

export const SECRET = 'e2e-scheduler-secret-0123456789';
/** The admin API key every test scheduler makes sure of (BATON_ADMIN_KEY), and tests call with. */
export const ADMIN_KEY = 'baton_e2e-admin-key-0123456789abcdef';
/** The header of an API call made with the admin key. */
export const AUTH = { authorization: `Bearer ${ADMIN_KEY}` };

/** Fast settings so timeouts and polls happen within a test. */
export const FAST: NodeJS.ProcessEnv = {
  BATON_AUTH_MODE: 'hmac',
  BATON_AUTH_SECRET: SECRET,
  BATON_ADMIN_KEY: ADMIN_KEY,
  BATON_POLL_INTERVAL_MS: '200',
  BATON_CHECKER_INTERVAL_MS: '200',
  BATON_DISPATCH_INTERVAL_MS: '50',
  BATON_CLAIM_LEASE_MS: '4000',
  BATON_CALL_TIMEOUT_MS: '2000',
  BATON_WORKER_STALE_MS: '3000',
};

/**
 * A template worker that registers with `schedulerUrl` (HMAC with SECRET, 300 ms heartbeats) and
 * logs every run start and end to `runLog`.
 */
export function startTemplateWorker(
  workerId: string,
  schedulerUrl: string,
  runLog: string,
  extra: NodeJS.ProcessEnv = {},
): Promise<RunningProcess> {
  return startProcess(WORKER_MAIN, {
    WORKER_PORT: '0',
    WORKER_ID: workerId,
    BATON_AUTH_MODE: 'hmac',
    BATON_AUTH_SECRET: SECRET,
    BATON_SCHEDULER_URL: schedulerUrl,
    WORKER_HEARTBEAT_MS: '300',
    WORKER_RUN_LOG: runLog,
    ...extra,
  });
}

export function startScheduler(
  backend: Backend,
  extra: NodeJS.ProcessEnv = {},
): Promise<RunningProcess> {
  return startProcess(SCHEDULER_MAIN, { SCHEDULER_PORT: '0', ...FAST, ...backend.env, ...extra });
}

/**
 * `n` schedulers on ports of their own, kept for their lives: an instance started again (after a
 * kill or a stop) answers at the same URL. Every process started is added to `procs`, so the
 * suite's clean-up stops whatever is left.
 */
export async function startFleet(
  backend: Backend,
  n: number,
  name: string,
  procs: Set<RunningProcess>,
): Promise<{ schedulers: RunningProcess[]; urls: string[]; start(i: number): Promise<void> }> {
  const ports: number[] = [];
  for (let i = 0; i < n; i++) ports.push(await freePort());
  const schedulers: RunningProcess[] = [];
  const start = async (i: number): Promise<void> => {
    schedulers[i] = await startScheduler(backend, {
      SCHEDULER_PORT: String(ports[i]),
      BATON_INSTANCE_ID: `${name}-${i + 1}`,
    });
    procs.add(schedulers[i]);
  };
  for (let i = 0; i < n; i++) await start(i);
  return { schedulers, urls: schedulers.map((s) => s.url), start };
}

interface Answer<T> {
  status: number;
  code: number;
  message: string;
  data: T;
}

/**
 * The scheduler's public API for tests: `call` answers the raw status and envelope (for tests of
 * refusals); the rest goes through the scheduler client, as a team's code would.
 */
export class Api {
  readonly client: SchedulerClient;

  constructor(
    readonly base: string,
    readonly apiKey: string = ADMIN_KEY,
  ) {
    this.client = new SchedulerClient({ urls: [base], maxTries: 3, apiKey });
  }

  async call<T = Record<string, unknown>>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer<T>> {
    const res = await request(`${this.base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.apiKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!String(res.headers['content-type']).startsWith('application/json')) {
      // Not an envelope (the live stream, metrics): the text as it came, as the message.
      const text = await res.body.text();
      return { status: res.statusCode, code: 0, message: text, data: undefined as T };
    }
    const json = (await res.body.json()) as { code: number; message: string; data: T };
    return { status: res.statusCode, ...json };
  }

  async create(body: Record<string, unknown>): Promise<string> {
    return (await this.client.createTask(body as unknown as CreateTask)).task_id;
  }

  async task(id: string): Promise<Record<string, unknown>> {
    return (await this.client.getTask(id)) as unknown as Record<string, unknown>;
  }

  /** The statuses of the lifecycle log, in order: its moves (notes, from = to, left out). */
  async sequence(id: string): Promise<string[]> {
    const events = (
      await this.call<{ from: string | null; to: string }[]>('GET', `/v1/tasks/${id}/events`)
    ).data;
    return events.filter((e) => e.from !== e.to).map((e) => e.to);
  }

  async events(id: string): Promise<TaskEventRow[]> {
    return (await this.call<TaskEventRow[]>('GET', `/v1/tasks/${id}/events`)).data;
  }

  /** Waits until the task reaches FINISH (or `status`), and returns it. */
  async until(id: string, status = 'FINISH', timeoutMs = 20_000): Promise<Record<string, unknown>> {
    return eventually(
      async () => {
        const t = await this.task(id);
        return t.task_status === status ? t : undefined;
      },
      timeoutMs,
      `task ${id} reaching ${status}`,
    );
  }

  async waitForWorkers(n: number, timeoutMs = 10_000): Promise<void> {
    await eventually(
      async () => {
        const ws = (await this.call<{ health: string }[]>('GET', '/v1/workers')).data;
        return ws.filter((w) => w.health === 'healthy').length >= n ? true : undefined;
      },
      timeoutMs,
      `${n} healthy workers`,
    );
  }
}

/** One row of a task's lifecycle (`GET /v1/tasks/{id}/events`). */
export interface TaskEventRow {
  from: string | null;
  to: string;
  reason: string;
  actor: string;
  attempt: number;
  at: string;
  repeats: number;
  last_at: string | null;
}
