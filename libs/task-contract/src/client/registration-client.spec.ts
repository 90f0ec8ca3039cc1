import { AddressInfo } from 'node:net';
import { Server, createServer } from 'node:http';
import { ManualClock } from '@baton/time';
import { BlockingKind } from '../enums/task-kind.enum';
import { ContractErrorCode } from '../errors/contract.exception';
import { RegistrationOptions, WorkerRegistration } from './registration-client';

type Line = { level: 'debug' | 'warn'; message: string; at: number };
type Answer = { status: number; code: number; message: string };

const OK: Answer = { status: 200, code: ContractErrorCode.OK, message: 'ok' };

/**
 * The client's deadline per call: the only timer on the clock while a call is out, and longer
 * than any wait between tries here, so the two are told apart (`waiting`).
 */
const CALL_TIMEOUT_MS = 600_000;

/**
 * A stand-in scheduler on a real socket: records what it is sent (at the clock's time) and
 * answers what it is told.
 */
class FakeScheduler {
  readonly requests: { method: string; url: string; body: string; at: number }[] = [];
  /** The answer, or how to answer a body. */
  answer: Answer | ((body: string) => Answer) = OK;
  /** The data of a successful answer. */
  data: unknown = {};
  private readonly server: Server;

  constructor(
    readonly port: number,
    private readonly clock: ManualClock,
  ) {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        const at = this.clock.now();
        this.requests.push({ method: req.method ?? '', url: req.url ?? '', body, at });
        const answer = typeof this.answer === 'function' ? this.answer(body) : this.answer;
        const { status, code, message } = answer;
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

/**
 * Settles (20 turns of the event loop each) before a broken test gives up: far more than a call
 * over loopback needs, and counted in turns, not time, so a loaded machine does not end it early.
 */
const MAX_SETTLES = 2_000;

/**
 * The registration waits for its next try: its one timer is due before a call's deadline would
 * be (while a call is out, the call's deadline is the only timer).
 */
const waiting = (clock: ManualClock): boolean =>
  clock.pending() === 1 && (clock.nextDue() ?? Infinity) < clock.now() + CALL_TIMEOUT_MS;

/** Lets the real I/O of the try under way finish, without moving the clock. */
async function settleTry(clock: ManualClock): Promise<void> {
  for (let i = 0; !waiting(clock); i++) {
    if (i >= MAX_SETTLES) throw new Error('a registration try never ended');
    await clock.settle();
  }
}

/**
 * Moves the clock from one try to the next (each finished before the clock moves on) until
 * `done` holds, at most `maxMs` of clock time; throws when it never does, naming `what`.
 */
async function triesUntil(
  clock: ManualClock,
  what: string,
  done: () => boolean,
  maxMs = 60_000,
): Promise<void> {
  const limit = clock.now() + maxMs;
  for (;;) {
    await settleTry(clock);
    if (done()) return;
    const next = clock.nextDue() as number;
    if (next > limit) throw new Error(`${what}: not within ${maxMs} ms of clock time`);
    await clock.advanceTo(next);
  }
}

describe('WorkerRegistration', () => {
  let clock: ManualClock;
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
      timeoutMs: CALL_TIMEOUT_MS,
      clock,
      logger: {
        debug: (message) => lines.push({ level: 'debug', message, at: clock.now() }),
        warn: (message) => lines.push({ level: 'warn', message, at: clock.now() }),
      },
      ...options,
    });
    await registration.start();
  };
  const warnings = (): Line[] => lines.filter((l) => l.level === 'warn');
  const debugs = (): Line[] => lines.filter((l) => l.level === 'debug');

  beforeEach(async () => {
    clock = new ManualClock();
    scheduler = new FakeScheduler(await freePort(), clock);
    registration = undefined;
    lines = [];
  });

  afterEach(async () => {
    await registration?.stop();
    await scheduler.close();
  });

  it('registers again without the schemas, and says so once, when the scheduler predates them', async () => {
    await scheduler.listen();
    // What a scheduler before contract 1.4.0 answers to a field it does not know.
    scheduler.answer = (body) =>
      body.includes('params_schema')
        ? {
            status: 400,
            code: ContractErrorCode.VALIDATION_FAILED,
            message: 'task_types.0.property params_schema should not exist',
          }
        : OK;
    const schema = { type: 'object', properties: { n: { type: 'integer' } } };
    await start({
      taskTypes: [
        {
          task_type: 'demo.echo',
          blocking: BlockingKind.SYNC,
          implements: [],
          params_schema: schema,
          result_schema: schema,
        },
      ],
    });
    await triesUntil(clock, 'two heartbeats', () => scheduler.heartbeats() >= 2);
    const posts = scheduler.requests.filter((r) => r.method === 'POST');
    expect(posts).toHaveLength(2);
    expect(JSON.parse(posts[0].body).task_types[0].params_schema).toEqual(schema);
    expect(JSON.parse(posts[1].body).task_types).toEqual([
      { task_type: 'demo.echo', blocking: BlockingKind.SYNC, implements: [] },
    ]);
    expect(warnings().map((l) => l.message)).toEqual([
      expect.stringContaining('does not take params_schema/result_schema'),
    ]);
  });

  it('heartbeats as often as the registration answer asks when that is more often', async () => {
    await scheduler.listen();
    scheduler.data = { worker_id: 'worker-1', timing: { heartbeat_interval_ms: 20 } };
    const t0 = clock.now();
    await start({ heartbeatMs: 60_000 });
    await triesUntil(clock, 'three heartbeats at the interval asked for', () => {
      return scheduler.heartbeats() >= 3;
    });
    expect(scheduler.requests.map((r) => [r.method, r.at - t0])).toEqual([
      ['POST', 0],
      ['PUT', 20],
      ['PUT', 40],
      ['PUT', 60],
    ]);
  });

  it('waits quietly for a scheduler that starts listening within the grace period', async () => {
    const t0 = clock.now();
    await start({ startupGraceMs: 10_000 });
    await triesUntil(
      clock,
      '900 ms of refused tries',
      () => (clock.nextDue() ?? Infinity) > t0 + 900,
    );
    await clock.advanceTo(t0 + 900);
    expect(scheduler.requests).toHaveLength(0);
    // Retried quickly (100 ms, then doubling), each refusal at debug only.
    expect(debugs().map((l) => l.at - t0)).toEqual([0, 100, 300, 700]);
    expect(debugs()[0].message).toContain('ECONNREFUSED');

    await scheduler.listen();
    await triesUntil(clock, 'a heartbeat after registering', () => scheduler.heartbeats() >= 1);

    const registered = scheduler.requests[0];
    expect(registered.method).toBe('POST');
    expect(registered.url).toBe('/v1/workers');
    expect(JSON.parse(registered.body)).toMatchObject({ worker_id: 'worker-1', capacity: 2 });
    expect(warnings()).toEqual([]);
  });

  it('warns once, not on every retry, when the scheduler is still refused after the grace period', async () => {
    const startedAt = clock.now();
    await start({ startupGraceMs: 300 });
    // Refused tries past the grace: the first warns, the next ones (up to 1 s apart) do not.
    await triesUntil(clock, 'two refused tries after the grace period', () => {
      const late = lines.filter((l) => l.at - startedAt >= 300);
      return late.length >= 2;
    });
    await scheduler.listen();
    await triesUntil(clock, 'a heartbeat after registering', () => scheduler.heartbeats() >= 1);

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

    await triesUntil(clock, 'three more registrations answered 401', () => {
      return scheduler.requests.length >= 4;
    });
    expect(warnings()).toHaveLength(1);

    scheduler.answer = OK;
    await triesUntil(clock, 'a heartbeat after registering', () => scheduler.heartbeats() >= 1);
    expect(warnings()).toHaveLength(1);
  });
});
