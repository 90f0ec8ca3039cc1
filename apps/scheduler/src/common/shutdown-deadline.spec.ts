import { ManualClock } from '@baton/time';
import { ShutdownDeadline } from './shutdown-deadline';

describe('ShutdownDeadline', () => {
  it('ends the process at its grace after the first start, once, and never before', async () => {
    const clock = new ManualClock();
    const exits: number[] = [];
    const deadline = new ShutdownDeadline(20_000, clock, (ms) => exits.push(ms));
    await clock.advance(60_000);
    expect(exits).toEqual([]);
    deadline.start();
    await clock.advance(5000);
    // A second signal does not move the bound.
    deadline.start();
    await clock.advance(14_999);
    expect(exits).toEqual([]);
    await clock.advance(1);
    expect(exits).toEqual([20_000]);
    await clock.advance(60_000);
    expect(exits).toEqual([20_000]);
  });

  it('gives the drives under way half the grace, the rest to hand back and close', () => {
    expect(ShutdownDeadline.drivesShare(20_000)).toBe(10_000);
    expect(ShutdownDeadline.drivesShare(0)).toBe(0);
  });
});
