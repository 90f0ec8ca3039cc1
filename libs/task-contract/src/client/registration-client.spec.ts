import { AddressInfo } from 'node:net';
import { Server, createServer } from 'node:http';
import { BlockingKind } from '../enums/task-kind.enum';
import { ContractErrorCode } from '../errors/contract.exception';
import { RegistrationOptions, WorkerRegistration } from './registration-client';

type Line = { level: 'debug' | 'warn'; message: string; at: number };
type Answer = { status: number; code: number; message: string };

const OK: Answer = { status: 200, code: ContractErrorCode.OK, message: 'ok' };

/** A stand-in scheduler on a real socket: records what it is sent, answers what it is told. */
class FakeScheduler {
  readonly requests: { method: string; url: string; body: string }[] = [];
  answer: Answer = OK;
  /** The data of a successful answer. */
  data: unknown = {};
  private readonly server: Server;

  constructor(readonly port: number) {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        this.requests.push({ method: req.method ?? '', url: req.url ?? '', body });
        const { status, code, message } = this.answer;
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ code, message, data: code === 0 ? this.data : null }));
      });
    });
  }

  listen(): Promise<void> {
    return new Promise((resolve) => this.server.listen(this.port, '127.0.0.1', resolve));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  heartbeats(): number {
    return this.requests.filter((r) => r.method === 'PUT' && r.url.endsWith('/heartbeat')).length;
  }
}

/** A port nothing listens on (yet): taken from the OS on port 0, then given back. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function waitFor(what: string, condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('WorkerRegistration', () => {
  let scheduler: FakeScheduler;
  let registration: WorkerRegistration | undefined;
  let lines: Line[];

  const start = async (options: Partial<RegistrationOptions>): Promise<void> => {
    registration = new WorkerRegistration({
      schedulerUrl: `http://127.0.0.1:${scheduler.port}`,
      auth: { mode: 'none' },
      workerId: 'worker-1',
      publicUrl: 'http://127.0.0.1:1',
      version: 'test',
      capacity: 2,
      taskTypes: [{ task_type: 'demo.echo', blocking: BlockingKind.SYNC, implements: [] }],
      heartbeatMs: 50,
      logger: {
        debug: (message) => lines.push({ level: 'debug', message, at: Date.now() }),
        warn: (message) => lines.push({ level: 'warn', message, at: Date.now() }),
      },
      ...options,
    });
    await registration.start();
  };
  const warnings = (): Line[] => lines.filter((l) => l.level === 'warn');
  const debugs = (): Line[] => lines.filter((l) => l.level === 'debug');

  beforeEach(async () => {
    scheduler = new FakeScheduler(await freePort());
    registration = undefined;
    lines = [];
  });

  afterEach(async () => {
    await registration?.stop();
    await scheduler.close();
  });

  it('heartbeats as often as the registration answer asks when that is more often', async () => {
    await scheduler.listen();
    scheduler.data = { worker_id: 'worker-1', timing: { heartbeat_interval_ms: 20 } };
    await start({ heartbeatMs: 60_000 });
    await waitFor('three heartbeats at the interval asked for', () => scheduler.heartbeats() >= 3);
  });

  it('waits quietly for a scheduler that starts listening within the grace period', async () => {
    await start({ startupGraceMs: 10_000 });
    await sleep(900);
    expect(scheduler.requests).toHaveLength(0);
    expect(debugs().length).toBeGreaterThanOrEqual(3);
    expect(debugs()[0].message).toContain('ECONNREFUSED');

    await scheduler.listen();
    await waitFor('a heartbeat after registering', () => scheduler.heartbeats() >= 1);

    const registered = scheduler.requests[0];
    expect(registered.method).toBe('POST');
    expect(registered.url).toBe('/v1/workers');
    expect(JSON.parse(registered.body)).toMatchObject({ worker_id: 'worker-1', capacity: 2 });
    expect(warnings()).toEqual([]);
  });

  it('warns once, not on every retry, when the scheduler is still refused after the grace period', async () => {
    const startedAt = Date.now();
    await start({ startupGraceMs: 300 });
    // Refused tries past the grace: the first warns, the next ones (about 1 s apart) do not.
    await waitFor('two refused tries after the grace period', () => {
      const late = lines.filter((l) => l.at - startedAt >= 300);
      return late.length >= 2;
    });
    await scheduler.listen();
    await waitFor('a heartbeat after registering', () => scheduler.heartbeats() >= 1);

    expect(warnings()).toHaveLength(1);
    expect(warnings()[0].message).toContain('ECONNREFUSED');
    expect(warnings()[0].at - startedAt).toBeGreaterThanOrEqual(300);
    // Every refused try within the grace period was debug only.
    for (const line of lines.filter((l) => l.at - startedAt < 300)) {
      expect(line.level).toBe('debug');
    }
  });

  it('warns at once, and once, when the scheduler answers with an error', async () => {
    scheduler.answer = {
      status: 401,
      code: ContractErrorCode.BAD_SIGNATURE,
      message: 'signature does not match',
    };
    await scheduler.listen();
    await start({ startupGraceMs: 10_000 });
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0].message).toContain('signature does not match');

    await waitFor('three more registrations answered 401', () => scheduler.requests.length >= 4);
    expect(warnings()).toHaveLength(1);

    scheduler.answer = OK;
    await waitFor('a heartbeat after registering', () => scheduler.heartbeats() >= 1);
    expect(warnings()).toHaveLength(1);
  });
});
