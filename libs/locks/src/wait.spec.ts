import { describe, expect, it } from '@jest/globals';
import { ManualClock } from '@baton/time';
import { KeyWaiters } from './wait';

describe('KeyWaiters', () => {
  it('does not lose a wake-up when the epoch map is cleared between the attempt and the wait', async () => {
    const clock = new ManualClock();
    const waiters = new KeyWaiters(clock);
    // A trier reads the epoch of a key nobody notified yet, then fails its attempt ...
    const seen = waiters.epoch('k');
    // ... the key is released (notified), and 10k other keys overflow the map meanwhile.
    waiters.notify('k');
    for (let i = 0; i <= 10_001; i++) waiters.notify(`other-${i}`);
    // The wait must return at once, not sleep for its whole timeout: with the clock standing
    // still, only a wait that never armed its timer can have ended.
    let woke = false;
    const waiting = waiters.wait('k', 5000, seen).then(() => (woke = true));
    await clock.settle();
    expect(woke).toBe(true);
    expect(clock.pending()).toBe(0);
    await waiting;
  });
});
