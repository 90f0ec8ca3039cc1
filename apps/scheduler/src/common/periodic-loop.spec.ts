import { Logger } from '@nestjs/common';
import { ManualClock } from '@baton/time';
import { PeriodicLoop } from './periodic-loop';

/** A logger that keeps what it is told. */
function keptLogger(): { logger: Logger; errors: string[] } {
  const errors: string[] = [];
  const logger = { error: (m: string) => errors.push(m) } as unknown as Logger;
  return { logger, errors };
}

describe('PeriodicLoop', () => {
  it('runs one pass at a time, and goes on after a pass that failed', async () => {
    const clock = new ManualClock();
    const { logger, errors } = keptLogger();
    let passes = 0;
    const loop = new PeriodicLoop(clock, logger, 1000, async () => {
      passes++;
      if (passes === 2) throw new Error('backend down');
    });
    loop.start();
    await clock.advance(3000);
    expect(passes).toBe(3);
    expect(errors).toEqual(['pass failed: backend down']);
    await loop.stop();
  });

  it('says so once when a pass never ends (the loop would wait on it for ever)', async () => {
    const clock = new ManualClock();
    const { logger, errors } = keptLogger();
    let passes = 0;
    const loop = new PeriodicLoop(clock, logger, 200, () => {
      passes++;
      return new Promise(() => undefined);
    });
    loop.start();
    await clock.advance(200 + 59_999);
    expect(errors).toEqual([]);
    await clock.advance(1);
    expect(errors).toEqual(['a pass has been under way for 60000 ms and the loop waits on it']);
    await clock.advance(600_000);
    expect(errors).toHaveLength(1);
    expect(passes).toBe(1);
  });

  it('does not report a slow pass that ends in time', async () => {
    const clock = new ManualClock();
    const { logger, errors } = keptLogger();
    let end: (() => void) | undefined;
    let passes = 0;
    const loop = new PeriodicLoop(clock, logger, 1000, () => {
      passes++;
      return new Promise<void>((resolve) => (end = resolve));
    });
    loop.start();
    await clock.advance(1000 + 59_000);
    end!();
    await clock.advance(1000);
    expect(passes).toBe(2);
    await clock.advance(600_000);
    // The second pass never ends: reported once; the first, which ended in time, was not.
    expect(errors).toEqual(['a pass has been under way for 60000 ms and the loop waits on it']);
  });
});
