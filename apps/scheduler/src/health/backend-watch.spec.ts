import { Logger } from '@nestjs/common';
import { ContractErrorCode } from '@baton/task-contract';
import { ManualClock, STALL_GRACE_MS } from '@baton/time';
import { BackendWatch, backendUnreachable } from './backend-watch';

/** A logger that keeps its warnings. */
class Kept extends Logger {
  readonly warnings: string[] = [];
  override warn(message: unknown): void {
    this.warnings.push(String(message));
  }
}

/** A ping the test answers: each call waits until the test says how it ends. */
class Ping {
  calls = 0;
  private pending: { resolve: () => void; reject: (e: Error) => void }[] = [];
  readonly fn = (): Promise<void> => {
    this.calls++;
    return new Promise((resolve, reject) => this.pending.push({ resolve, reject }));
  };
  answer(): void {
    for (const p of this.pending.splice(0)) p.resolve();
  }
  refuse(message: string): void {
    for (const p of this.pending.splice(0)) p.reject(new Error(message));
  }
}

describe('BackendWatch', () => {
  const config = { intervalMs: 500, timeoutMs: 1500 };
  let clock: ManualClock;
  let logger: Kept;
  let watch: BackendWatch;

  beforeEach(() => {
    clock = new ManualClock();
    logger = new Kept();
    watch = new BackendWatch(clock, config, logger);
  });

  afterEach(() => watch.stop());

  it('finds a backend that stops answering down once its check times out, and refuses from then on', async () => {
    const ping = new Ping();
    const downs: string[] = [];
    watch.onDown((b) => downs.push(b));
    watch.watch('database', ping.fn);
    ping.answer();
    await clock.advance(500);
    expect(ping.calls).toBe(2);
    expect(watch.refusal()).toBeUndefined();
    // The partition: the second check is never answered.
    await clock.advance(1499);
    expect([watch.outage('database'), downs]).toEqual([undefined, []]);
    await clock.advance(1);
    expect(watch.outage('database')).toEqual({
      since: clock.now(),
      reason: 'no answer within 1500 ms',
    });
    expect(downs).toEqual(['database']);
    const refused = watch.refusal();
    expect(refused).toMatchObject({
      code: ContractErrorCode.NOT_READY,
      data: { backend: 'database', retry_after_seconds: 2 },
    });
    expect(refused?.message).toMatch(/nothing was done/);
    expect(watch.refusal('database', true)?.message).toMatch(/may or may not have taken effect/);
    // The queue is another backend: not refused.
    expect(watch.refusal('queue')).toBeUndefined();
  });

  it('warns once when an outage starts and once when it ends, with its length', async () => {
    const ping = new Ping();
    watch.watch('queue', ping.fn);
    ping.refuse('connect ECONNREFUSED 127.0.0.1:6379');
    await clock.advance(0);
    expect(watch.outage('queue')?.reason).toBe('connect ECONNREFUSED 127.0.0.1:6379');
    // Ten more failed checks: still one warning.
    for (let i = 0; i < 10; i++) {
      await clock.advance(500);
      ping.refuse('connect ECONNREFUSED 127.0.0.1:6379');
    }
    await clock.advance(500);
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toMatch(/^the queue did not answer \(connect ECONNREFUSED/);
    ping.answer();
    await clock.advance(0);
    expect(watch.outage('queue')).toBeUndefined();
    expect(logger.warnings).toHaveLength(2);
    expect(logger.warnings[1]).toBe(
      'the queue answers again, after 5.5 s without it (connect ECONNREFUSED 127.0.0.1:6379)',
    );
  });

  it('does not take a stall of its own process for an outage: an answer waiting unread is read first', async () => {
    const ping = new Ping();
    const downs: string[] = [];
    watch.onDown((b) => downs.push(b));
    watch.watch('database', ping.fn);
    ping.answer();
    await clock.advance(500);
    // The second check is sent; then this process gets no CPU for 3 s (a loaded box, a long GC).
    // The database answered meanwhile: the answer is in the socket when the process runs again,
    // after its check's timer, which is 2 s overdue.
    clock.stall(3000);
    ping.answer();
    await clock.advance(0);
    expect([watch.outage('database'), downs]).toEqual([undefined, []]);

    // A backend that is silent through a stall is still found down, once the process has had
    // running time to read an answer and none came.
    await clock.advance(500);
    clock.stall(3000);
    await clock.advance(0);
    expect(watch.outage('database')).toBeUndefined();
    await clock.advance(STALL_GRACE_MS);
    expect(watch.outage('database')?.reason).toBe('no answer within 1500 ms');
    expect(downs).toEqual(['database']);
  });

  it('checks one at a time: a check waits for the one before to end', async () => {
    const ping = new Ping();
    watch.watch('database', ping.fn);
    await clock.advance(10_000);
    // Checks at 0, 2, 4, 6, 8 and 10 s: each times out at 1.5 s, the next begins 0.5 s later.
    expect(ping.calls).toBe(6);
  });

  it("knows a backend's unreachable errors from a request's own", () => {
    expect(backendUnreachable({ driverError: { code: 'PROTOCOL_SEQUENCE_TIMEOUT' } })).toBe(true);
    expect(backendUnreachable({ code: 'ECONNREFUSED' })).toBe(true);
    expect(backendUnreachable(new Error('Command timed out'))).toBe(true);
    expect(backendUnreachable({ driverError: { code: 'ER_DUP_ENTRY' } })).toBe(false);
    expect(backendUnreachable(new Error('task not found'))).toBe(false);
  });
});
