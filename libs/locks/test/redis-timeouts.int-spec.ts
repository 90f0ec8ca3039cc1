import Redis from 'ioredis';
import { ManualClock } from '@baton/time';
import { COMMAND_TIMED_OUT, boundedRedis } from '../src/drivers/redis-timeouts';
import { outcome } from './fixtures/outcome';
import { TcpProxy } from './fixtures/tcp-proxy';

const HOST = process.env.REDIS_HOST ?? '127.0.0.1';
const PORT = Number(process.env.REDIS_PORT ?? 6379);

/**
 * Lets the loop turn a few times, then says what the promise came to so far: for a promise that
 * must still be pending (or that a sweep of the controlled clock has just failed). An outcome
 * that rides on real I/O is waited for with `outcome`, in real time: twenty turns were not
 * always enough for a reply through the proxy on a loaded machine.
 */
const io = (): Promise<void> => new Promise((r) => setImmediate(r));
async function settled<T>(p: Promise<T>): Promise<'pending' | 'ok' | string> {
  let state: 'pending' | 'ok' | string = 'pending';
  p.then(
    () => (state = 'ok'),
    (e: unknown) => (state = e instanceof Error ? e.message : String(e)),
  );
  for (let i = 0; i < 20 && state === 'pending'; i++) await io();
  return state;
}

/**
 * Every command of a Baton Redis client has a bound, counted in the process's running time: a
 * Redis behind a silent partition fails the command (and the connection is replaced), while a
 * stall of the process itself is no reason to fail a command whose reply waits unread. On the
 * machine's Redis, behind a proxy that can go silent.
 */
describe('boundedRedis command bounds', () => {
  let proxy: TcpProxy;
  let clock: ManualClock;
  let client: Redis | undefined;

  beforeEach(async () => {
    proxy = await TcpProxy.start(HOST, PORT);
    clock = new ManualClock();
    client = boundedRedis(
      { host: '127.0.0.1', port: proxy.port, commandTimeoutMs: 1000 },
      { clock, lazyConnect: true },
    );
    try {
      await client.connect();
      await client.ping();
    } catch (err) {
      throw new Error(
        `Redis at ${HOST}:${PORT} is not reachable (${(err as Error).message}): run \`bash scripts/services.sh\``,
      );
    }
  });

  afterEach(async () => {
    client?.disconnect();
    await proxy.close();
  });

  it('fails a command not answered within its bound, and answers again on a new connection', async () => {
    const redis = client!;
    proxy.blackhole();
    const lost = redis.ping();
    await clock.advance(999);
    expect(await settled(lost)).toBe('pending');
    // The sweep after the bound (every quarter of it) fails it.
    await clock.advance(250);
    expect(await outcome(lost)).toBe(COMMAND_TIMED_OUT);
    proxy.restore();
    // The old connection owed a reply; the new one does not.
    let answer: string | undefined;
    for (let i = 0; i < 200 && answer === undefined; i++) {
      answer = await redis.ping().catch(() => undefined);
      if (answer === undefined) await clock.advance(100);
    }
    expect(answer).toBe('PONG');
  });

  it('does not fail a command because the process stalled: the sweep that runs late reads first', async () => {
    const redis = client!;
    // Redis answers, but this process gets no CPU for 5 s meanwhile: the sweep that was due
    // after 250 ms runs 4.75 s late, before the reply waiting in the socket is read (Node runs
    // timers before I/O).
    proxy.hold();
    const answered = redis.ping();
    await settled(answered);
    clock.stall(5000);
    // The late sweep runs while the reply is still unread (held back here), then it is read.
    await clock.advance(0);
    proxy.release();
    expect(await outcome(answered)).toBe('ok');

    // Without a stall, a reply that does not come within the bound fails the command.
    proxy.hold();
    const slow = redis.ping();
    await clock.advance(999);
    expect(await settled(slow)).toBe('pending');
    await clock.advance(251);
    expect(await outcome(slow)).toBe(COMMAND_TIMED_OUT);
    proxy.release();
  });
});
