import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { ManualClock } from '@baton/time';
import { TaskStatus } from '../enums/task-status.enum';
import { ContractErrorCode } from '../errors/contract.exception';
import { WorkerUnavailableError } from '../errors/worker-call.errors';
import { TaskRecord } from '../worker/task-record';
import { CallbackClient } from './callback-client';

/** The client's own deadline per call: the only other timer on the clock while a call is out. */
const CALL_TIMEOUT_MS = 60_000;

/**
 * A scheduler on 127.0.0.1 that answers its first `failures` completion reports 503 (it is
 * restarting), then accepts them. Notes the clock's time at each report it receives.
 */
class RestartingScheduler {
  readonly tries: { at: number; url: string; body: unknown }[] = [];
  private readonly server: Server;

  constructor(
    private readonly clock: ManualClock,
    private readonly failures: number,
  ) {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        this.tries.push({ at: this.clock.now(), url: req.url ?? '', body: JSON.parse(body) });
        const failing = this.tries.length <= this.failures;
        res.writeHead(failing ? 503 : 200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(
            failing
              ? { code: ContractErrorCode.WORKER_UNAVAILABLE, message: 'restarting', data: null }
              : { code: 0, message: 'ok', data: {} },
          ),
        );
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function ended(taskId: string): TaskRecord {
  const at = new Date(0).toISOString();
  return {
    task_id: taskId,
    task_type: 'demo.sleep',
    task_name: taskId,
    status: TaskStatus.SUCCESS,
    attempt: 2,
    fence: 7,
    create_info: { task_type: 'demo.sleep', task_name: taskId },
    process_arg: {},
    params: {},
    lock_keys: [],
    progress: { percent: 100, step: null, message: null, updated_at: at },
    heartbeat_at: null,
    result: { slept_ms: 10 },
    error: null,
    paused_from: null,
    created_at: at,
    updated_at: at,
  };
}

/**
 * Settles (20 turns of the event loop each) before a broken test gives up: far more than a call
 * over loopback needs, and counted in turns, not time, so a loaded machine does not end it early.
 */
const MAX_SETTLES = 2_000;

/**
 * Lets the real I/O between client and server run, without moving the clock, until `done`. The
 * bound only ends a broken test; nothing here waits on a back-off.
 */
async function settleUntil(clock: ManualClock, what: string, done: () => boolean): Promise<void> {
  for (let i = 0; !done(); i++) {
    if (i >= MAX_SETTLES) throw new Error(`never settled: ${what}`);
    await clock.settle();
  }
}

/** A back-off is waiting: a timer due before the call deadline that a new try would set. */
const retryArmed = (clock: ManualClock): boolean =>
  clock.pending() === 1 && (clock.nextDue() ?? Infinity) < clock.now() + CALL_TIMEOUT_MS;

describe('CallbackClient completion retries on a ManualClock', () => {
  let clock: ManualClock;
  let client: CallbackClient | undefined;
  let scheduler: RestartingScheduler | undefined;

  const start = async (failures: number): Promise<CallbackClient> => {
    clock = new ManualClock();
    scheduler = new RestartingScheduler(clock, failures);
    client = new CallbackClient({
      schedulerUrl: await scheduler.listen(),
      auth: { mode: 'none' },
      timeoutMs: CALL_TIMEOUT_MS,
      clock,
    });
    return client;
  };

  afterEach(async () => {
    await client?.close();
    await scheduler?.close();
    client = scheduler = undefined;
  });

  it('tries again 200 ms after a failed report, then 800 ms after that, on clock time', async () => {
    const reporter = await start(2);
    const t0 = clock.now();
    let delivered = false;
    const done = reporter.completed(ended('t-1')).then(() => (delivered = true));

    await settleUntil(clock, 'the first report refused', () => retryArmed(clock));
    expect(scheduler!.tries).toHaveLength(1);
    await clock.advance(199);
    expect(scheduler!.tries).toHaveLength(1); // no second try before 200 ms

    await clock.advance(1);
    await settleUntil(clock, 'the second report refused', () => retryArmed(clock));
    expect(scheduler!.tries).toHaveLength(2);
    await clock.advance(799);
    expect(scheduler!.tries).toHaveLength(2); // the next wait is four times longer

    await clock.advance(1);
    await settleUntil(clock, 'the third report accepted', () => delivered);
    await done;
    expect(scheduler!.tries.map((t) => t.at - t0)).toEqual([0, 200, 1000]);
    for (const t of scheduler!.tries) {
      expect(t.url).toBe('/v1/tasks/t-1/notify');
      expect(t.body).toEqual({ attempt: 2, task_status: 'SUCCESS', result: { slept_ms: 10 } });
    }
    expect(clock.pending()).toBe(0);
  });

  it('gives up after the fourth try, 4200 ms of clock time after the first', async () => {
    const reporter = await start(Infinity);
    const t0 = clock.now();
    let outcome: unknown;
    const done = reporter.completed(ended('t-2')).catch((err: unknown) => (outcome = err));

    for (const wait of [200, 800, 3200]) {
      await settleUntil(clock, `a refused report before a ${wait} ms wait`, () =>
        retryArmed(clock),
      );
      await clock.advance(wait);
    }
    await settleUntil(clock, 'the last report refused', () => outcome !== undefined);
    await done;
    expect(outcome).toBeInstanceOf(WorkerUnavailableError);
    expect(scheduler!.tries.map((t) => t.at - t0)).toEqual([0, 200, 1000, 4200]);
    // Nothing left waiting: no fifth try, no call deadline.
    expect(clock.pending()).toBe(0);
    await clock.advance(60_000);
    expect(scheduler!.tries).toHaveLength(4);
  });
});
