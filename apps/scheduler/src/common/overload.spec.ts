import { ManualClock } from '@baton/time';
import { loadSchedulerConfig } from '../config';
import { Overload } from './overload';

/*
 * The clock's `stall(ms)` moves it on without running any timer, so the sampling tick that falls
 * due next runs `ms` late by the clock, as it does after the real loop was blocked. (Node's own
 * event-loop histogram is the real process's and stays out of a unit test: here it only sees a
 * loop that is not blocked.)
 */
describe('Overload', () => {
  let clock: ManualClock;
  const make = (env: Record<string, string>): Overload => {
    clock = new ManualClock();
    return new Overload(loadSchedulerConfig({ BATON_AUTH_MODE: 'none', ...env }), clock);
  };

  it('admits up to the in-flight limit, and again once a request is done', () => {
    const o = make({ BATON_API_MAX_IN_FLIGHT: '2' });
    try {
      const a = o.admit();
      const b = o.admit();
      expect('done' in a && 'done' in b).toBe(true);
      const c = o.admit();
      expect(c).toEqual({ refused: expect.stringMatching(/2 requests in progress \(limit 2\)/) });
      if ('done' in a) {
        a.done();
        a.done(); // twice counts once
      }
      expect(o.inFlight).toBe(1);
      expect('done' in o.admit()).toBe(true);
      expect('refused' in o.admit()).toBe(true);
    } finally {
      o.onModuleDestroy();
    }
  });

  it('refuses while the event loop runs late, and admits again once it catches up', async () => {
    const o = make({ BATON_OVERLOAD_LAG_MS: '300' });
    try {
      await clock.advance(600);
      expect(o.lagging).toBe(false);
      // Overload as it comes: the loop blocked again and again, each time for longer than a
      // sample and the limit. One block alone is a stall, not overload ...
      clock.stall(1500);
      await clock.advance(0);
      expect(o.lagging).toBe(false);
      // ... the next sample late again is a loop that cannot keep up.
      clock.stall(1500);
      await clock.advance(0);
      expect(o.lagMs).toBeGreaterThan(300);
      expect(o.admit()).toEqual({ refused: expect.stringMatching(/event loop \d+ ms behind/) });
      // Caught up: the lateness is remembered for a little while (halved every sample) ...
      await clock.advance(500);
      expect(o.lagging).toBe(true);
      // ... and let go of once it falls under the limit.
      await clock.advance(2500);
      expect(o.lagging).toBe(false);
      expect('done' in o.admit()).toBe(true);
    } finally {
      o.onModuleDestroy();
    }
  });
});
