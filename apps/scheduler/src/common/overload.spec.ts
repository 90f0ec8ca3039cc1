import { systemClock } from '@baton/time';
import { loadSchedulerConfig } from '../config';
import { Overload } from './overload';

const busy = (ms: number): void => {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    /* the event loop is blocked */
  }
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('Overload', () => {
  const make = (env: Record<string, string>): Overload =>
    new Overload(loadSchedulerConfig({ BATON_AUTH_MODE: 'none', ...env }), systemClock);

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
      await sleep(600);
      expect(o.lagging).toBe(false);
      // Overload as it comes: the loop blocked again and again, each time for longer than a
      // sample and the limit (one block alone is a stall, not overload).
      for (let i = 0; i < 8 && !o.lagging; i++) {
        busy(900);
        await sleep(1);
      }
      expect(o.lagMs).toBeGreaterThan(300);
      expect(o.admit()).toEqual({ refused: expect.stringMatching(/event loop \d+ ms behind/) });
      await sleep(3000);
      expect(o.lagging).toBe(false);
      expect('done' in o.admit()).toBe(true);
    } finally {
      o.onModuleDestroy();
    }
  });
});
