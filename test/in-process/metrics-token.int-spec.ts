import { request } from 'undici';
import { ADMIN_KEY } from '../support/baton';
import { InProcessBaton, startInProcess } from '../support/in-process';

jest.setTimeout(60_000);

const TOKEN = 'scrape-token-0123456789abcdef';

/**
 * `BATON_METRICS_TOKEN`: a scheduler that sets it answers `/metrics` only to a scraper that
 * brings it (an API key is not a scrape token); the probes stay open.
 */
describe('/metrics behind a scrape token', () => {
  let baton: InProcessBaton;

  beforeAll(async () => {
    baton = await startInProcess({ BATON_METRICS_TOKEN: TOKEN });
  });

  afterAll(async () => {
    await baton?.stop();
  });

  const scrape = async (authorization?: string) => {
    const res = await request(`${baton.api.base}/metrics`, {
      headers: authorization ? { authorization } : {},
    });
    return { status: res.statusCode, text: await res.body.text() };
  };

  it('answers 401 in the envelope without the token, with another, or with an API key', async () => {
    for (const auth of [undefined, `Bearer ${TOKEN}x`, `Bearer ${ADMIN_KEY}`, TOKEN]) {
      const res = await scrape(auth);
      expect([auth, res.status, JSON.parse(res.text)]).toEqual([
        auth,
        401,
        { code: 40100, message: expect.stringMatching(/BATON_METRICS_TOKEN/), data: null },
      ]);
    }
  });

  it('answers the Prometheus text to the token; the probes need none', async () => {
    const res = await scrape(`Bearer ${TOKEN}`);
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/^# HELP baton_/m);
    const live = await request(`${baton.api.base}/health/live`);
    expect(live.statusCode).toBe(200);
    await live.body.dump();
  });
});
