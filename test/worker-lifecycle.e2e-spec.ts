import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateTaskRequestDto,
  RequestVerifier,
  TaskStatus,
  WorkerClient,
} from '@baton/task-contract';
import { RunningProcess, WORKER_MAIN, eventually, holds, startProcess } from './support/processes';

const SECRET = 'lifecycle-secret-0123456789';
let seq = 0;
const newId = (label: string): string =>
  `${label}-${process.pid}-${Date.now().toString(36)}-${++seq}`;
const body = (
  type: string,
  id: string,
  params: Record<string, unknown>,
  attempt = 1,
): CreateTaskRequestDto => ({
  task_id: id,
  attempt,
  create_info: { task_type: type, task_name: `lifecycle ${id}` },
  params,
});

interface Received {
  path: string;
  fence: string | undefined;
  body: Record<string, unknown>;
}

/**
 * A stand-in for the scheduler's callback endpoints (they land with the scheduler core): a real
 * HTTP server that verifies every signature with the same verifier the apps use.
 */
class CallbackRecorder {
  readonly received: Received[] = [];
  readonly refused: string[] = [];
  /** Status codes to answer the next completion reports with, in order. */
  readonly notifyPlan: number[] = [];
  /**
   * While set, progress and heartbeat reports get no answer until it resolves (a scheduler that
   * answers slowly).
   */
  beatGate: Promise<void> | undefined;
  private server!: Server;
  private readonly verifier = new RequestVerifier({ mode: 'hmac', secret: SECRET });
  url = '';

  async start(): Promise<void> {
    this.server = createServer(
      (req, res) =>
        void this.handle(req).then(([status, payload]) =>
          res
            .writeHead(status, { 'content-type': 'application/json' })
            .end(JSON.stringify(payload)),
        ),
    );
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }

  private async handle(req: IncomingMessage): Promise<[number, unknown]> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    try {
      this.verifier.verify({
        method: req.method ?? '',
        pathWithQuery: req.url ?? '',
        headers: req.headers,
        rawBody: raw,
      });
    } catch (err) {
      this.refused.push(`${req.url}: ${(err as Error).message}`);
      return [401, { code: 40100, message: 'refused', data: null }];
    }
    const entry = {
      path: req.url ?? '',
      fence: req.headers['x-baton-fence'] as string | undefined,
      body: JSON.parse(raw.toString()) as Record<string, unknown>,
    };
    this.received.push(entry);
    if (!entry.path.endsWith('/notify') && this.beatGate) await this.beatGate;
    if (entry.path.endsWith('/notify') && this.notifyPlan.length > 0) {
      const status = this.notifyPlan.shift() as number;
      if (status !== 200)
        return [status, { code: status * 100, message: 'planned failure', data: null }];
    }
    return [200, { code: 0, message: 'ok', data: {} }];
  }
}

describe('async callbacks to the scheduler', () => {
  const recorder = new CallbackRecorder();
  let worker: RunningProcess;
  const client = new WorkerClient({ auth: { mode: 'hmac', secret: SECRET } });

  beforeAll(async () => {
    await recorder.start();
    worker = await startProcess(WORKER_MAIN, {
      WORKER_PORT: '0',
      BATON_AUTH_MODE: 'hmac',
      BATON_AUTH_SECRET: SECRET,
      BATON_SCHEDULER_URL: recorder.url,
    });
  });

  afterAll(async () => {
    await client.close();
    await worker?.stop();
    await recorder.stop();
  });

  it('reports progress, heartbeats and the outcome, signed and fenced', async () => {
    const id = newId('cb');
    await client.create(
      worker.url,
      'demo.sleep',
      body('demo.sleep', id, { seconds: 0.3, tick_ms: 100 }),
      { fence: 5 },
    );
    await client.run(worker.url, 'demo.sleep', id, { fence: 5 });
    const done = await eventually(
      async () => recorder.received.find((r) => r.path === `/v1/tasks/${id}/notify`),
      5000,
      'completion callback',
    );
    expect(done.fence).toBe('5');
    expect(done.body).toEqual({
      attempt: 1,
      task_status: TaskStatus.SUCCESS,
      result: { slept_ms: 300, ticks: 3 },
    });
    const progress = recorder.received.filter((r) => r.path === `/v1/tasks/${id}/progress`);
    expect(progress.map((p) => p.body.percent)).toEqual([
      expect.closeTo(33.33, 1),
      expect.closeTo(66.67, 1),
      100,
    ]);
    expect(progress.every((p) => p.fence === '5' && p.body.attempt === 1)).toBe(true);
    expect(recorder.refused).toEqual([]);
  });

  it('does not report a stop the scheduler asked for: the cancel’s own answer tells it', async () => {
    const id = newId('cbcancel');
    await client.create(
      worker.url,
      'demo.sleep',
      body('demo.sleep', id, { seconds: 30, tick_ms: 50 }),
      { fence: 1 },
    );
    await client.run(worker.url, 'demo.sleep', id, { fence: 1 });
    await client.notify(worker.url, 'demo.sleep', id, { event: 'cancel' as never }, { fence: 1 });
    const [task] = await eventually(async () => {
      const items = await client.query(worker.url, 'demo.sleep', { task_id: id }, { fence: 1 });
      return items[0]?.task_status === TaskStatus.FAIL ? items : undefined;
    });
    expect(task.error).toMatchObject({ message: 'cancelled', code: 'cancelled' });
    // Long enough for a report that was going to be sent (they go out at once).
    await holds(
      () => !recorder.received.some((r) => r.path === `/v1/tasks/${id}/notify`),
      1000,
      'no report of a cancelled run',
    );
  });

  it('a slow scheduler does not slow the run: reports go out in the background', async () => {
    const id = newId('cbslow');
    let answer = (): void => undefined;
    recorder.beatGate = new Promise<void>((r) => (answer = r));
    try {
      await client.create(
        worker.url,
        'demo.sleep',
        body('demo.sleep', id, { seconds: 0.5, tick_ms: 100 }),
        { fence: 1 },
      );
      await client.run(worker.url, 'demo.sleep', id, { fence: 1 });
      // Not one report has been answered: a run whose ticks waited for them would never end.
      await eventually(
        async () =>
          (await client.status(worker.url, 'demo.sleep', id, { fence: 1 })).task_status ===
          TaskStatus.SUCCESS
            ? true
            : undefined,
        30_000,
        'the run ending while no report is answered',
      );
      expect(recorder.received.some((r) => r.path === `/v1/tasks/${id}/progress`)).toBe(true);
      // The outcome is reported after the report in flight is answered, not before it.
      expect(recorder.received.some((r) => r.path === `/v1/tasks/${id}/notify`)).toBe(false);
      answer();
      await eventually(
        async () => recorder.received.find((r) => r.path === `/v1/tasks/${id}/notify`),
        30_000,
        'completion callback',
      );
      // Reports were coalesced while one was in flight: fewer than one per tick, the first sent.
      const reports = recorder.received.filter((r) => r.path === `/v1/tasks/${id}/progress`);
      expect(reports.length).toBeGreaterThanOrEqual(1);
      expect(reports.length).toBeLessThan(5);
    } finally {
      answer();
      recorder.beatGate = undefined;
    }
  });

  it('retries a completion report the scheduler could not take', async () => {
    const id = newId('cbretry');
    recorder.notifyPlan.push(503, 200);
    await client.create(
      worker.url,
      'demo.sleep',
      body('demo.sleep', id, { seconds: 0.05, tick_ms: 50 }),
      { fence: 1 },
    );
    await client.run(worker.url, 'demo.sleep', id, { fence: 1 });
    await eventually(
      async () =>
        recorder.received.filter((r) => r.path === `/v1/tasks/${id}/notify`).length === 2
          ? true
          : undefined,
      5000,
      'second report',
    );
  });
});

describe('SQLite task store across a worker crash', () => {
  let dir: string;
  let worker: RunningProcess | undefined;
  const client = new WorkerClient({ auth: { mode: 'hmac', secret: SECRET } });
  const start = (store: string) =>
    startProcess(WORKER_MAIN, {
      WORKER_PORT: '0',
      BATON_AUTH_MODE: 'hmac',
      BATON_AUTH_SECRET: SECRET,
      WORKER_STORE: 'sqlite',
      WORKER_STORE_PATH: store,
    });

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'baton-sqlite-'));
  });

  afterAll(async () => {
    await client.close();
    await worker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps its tasks after kill -9; a run cut off is not alive and can be retried', async () => {
    const store = join(dir, 'tasks.sqlite');
    worker = await start(store);
    const waiting = newId('kept');
    const cut = newId('cut');
    await client.create(worker.url, 'demo.echo', body('demo.echo', waiting, { x: 1 }), {
      fence: 3,
    });
    await client.create(worker.url, 'demo.sleep', body('demo.sleep', cut, { seconds: 60 }), {
      fence: 3,
    });
    await client.run(worker.url, 'demo.sleep', cut, { fence: 3 });
    await worker.kill9();

    worker = await start(store);
    await expect(
      client.status(worker.url, 'demo.echo', waiting, { fence: 3 }),
    ).resolves.toMatchObject({ task_status: TaskStatus.CREATE });
    await expect(
      client.heartbeat(worker.url, 'demo.sleep', cut, { fence: 3 }),
    ).resolves.toMatchObject({
      alive: false,
      task_status: TaskStatus.RUNNING,
      execution_lost: true,
    });
    // The fence survived too: an older lock holder is still refused after the restart.
    await expect(client.run(worker.url, 'demo.echo', waiting, { fence: 2 })).rejects.toMatchObject({
      name: 'StaleFenceError',
    });
    const retried = await client.create(
      worker.url,
      'demo.sleep',
      body('demo.sleep', cut, { seconds: 0.05, tick_ms: 50 }, 2),
      { fence: 4 },
    );
    expect(retried).toMatchObject({ task_status: TaskStatus.CREATE, attempt: 2 });
    await client.run(worker.url, 'demo.sleep', cut, { fence: 4 });
    await eventually(
      async () =>
        (await client.status(worker!.url, 'demo.sleep', cut, { fence: 4 })).task_status ===
        TaskStatus.SUCCESS
          ? true
          : undefined,
      5000,
      'SUCCESS',
    );
  });
});
