import { ManualClock } from '@baton/time';
import { KeyedMutex } from './keyed-mutex';

/** Each section takes 5 ms of this clock; the cases move it. */
let clock: ManualClock;
const tick = (): Promise<void> => clock.sleep(5);

describe('KeyedMutex', () => {
  beforeEach(() => {
    clock = new ManualClock();
  });

  it('runs sections of one key one at a time, in arrival order', async () => {
    const mutex = new KeyedMutex();
    const events: string[] = [];
    let inside = 0;
    let maxInside = 0;
    const all = Promise.all(
      [1, 2, 3, 4].map((n) =>
        mutex.run('k', async () => {
          inside++;
          maxInside = Math.max(maxInside, inside);
          events.push(`start ${n}`);
          await tick();
          events.push(`end ${n}`);
          inside--;
        }),
      ),
    );
    await clock.settle();
    expect(events).toEqual(['start 1']);
    // One section after the other: 5 ms each, 20 ms for the four.
    await clock.advance(15);
    expect(events).toHaveLength(7);
    await clock.advance(5);
    await all;
    expect(maxInside).toBe(1);
    expect(events).toEqual([
      'start 1',
      'end 1',
      'start 2',
      'end 2',
      'start 3',
      'end 3',
      'start 4',
      'end 4',
    ]);
    expect(mutex.size).toBe(0);
  });

  it('lets different keys run at the same time', async () => {
    const mutex = new KeyedMutex();
    let inside = 0;
    let maxInside = 0;
    let done = false;
    const all = Promise.all(
      ['a', 'b', 'c'].map((k) =>
        mutex.run(k, async () => {
          maxInside = Math.max(maxInside, ++inside);
          await tick();
          inside--;
        }),
      ),
    ).then(() => (done = true));
    // All three in at once, and all done after one section's 5 ms.
    await clock.advance(5);
    expect(done).toBe(true);
    await all;
    expect(maxInside).toBe(3);
  });

  it('keeps the queue going after a section throws, and passes the error to its caller', async () => {
    const mutex = new KeyedMutex();
    const failing = mutex.run('k', async () => {
      throw new Error('boom');
    });
    const next = mutex.run('k', async () => 'ran');
    await expect(failing).rejects.toThrow('boom');
    await expect(next).resolves.toBe('ran');
  });
});
