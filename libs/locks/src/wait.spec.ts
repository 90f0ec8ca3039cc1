import { describe, expect, it } from '@jest/globals';
import { KeyWaiters } from './wait';

describe('KeyWaiters', () => {
  it('does not lose a wake-up when the epoch map is cleared between the attempt and the wait', async () => {
    const waiters = new KeyWaiters();
    // A trier reads the epoch of a key nobody notified yet, then fails its attempt ...
    const seen = waiters.epoch('k');
    // ... the key is released (notified), and 10k other keys overflow the map meanwhile.
    waiters.notify('k');
    for (let i = 0; i <= 10_001; i++) waiters.notify(`other-${i}`);
    // The wait must return at once, not sleep for its whole timeout.
    const started = Date.now();
    await waiters.wait('k', 5000, seen);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
