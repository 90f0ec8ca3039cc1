import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import {
  AUTH,
  Api,
  Backend,
  embeddedBackend,
  productionBackend,
  startScheduler,
  SECRET,
  startTemplateWorker,
} from './support/baton';
import { authHeaders } from '../libs/task-contract/src';
import { RunningProcess, eventually } from './support/processes';

jest.setTimeout(120_000);

// Hostile bodies and URLs on every route: test/in-process/hostile-input.int-spec.ts.

/**
 * On both databases: ids, names and keys compare exactly (MariaDB's default collation ignores case
 * and trailing spaces, and once let a lower-cased id continue a paused task, delete a timer and a
 * log rule, change another type, deregister a worker, and find a task under `<id>%20`); and a storm
 * of cancels of one running task is one cancel (it once answered 500 on deadlocks on MariaDB, and
 * wrote one event per request on SQLite).
 */
describe.each([
  ['SQLite', embeddedBackend],
  ['MariaDB', productionBackend],
] as const)('ids and races on %s', (_name, makeBackend) => {
  let backend: Backend;
  let dir: string;
  let scheduler: RunningProcess;
  let worker: RunningProcess;
  let api: Api;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-exact-'));
    backend = await makeBackend();
    scheduler = await startScheduler(backend);
    worker = await startTemplateWorker('Exact-W1', scheduler.url, join(dir, 'runs.jsonl'));
    api = new Api(scheduler.url);
    await api.waitForWorkers(1, 30_000);
  });

  afterAll(async () => {
    await worker?.stop();
    await scheduler?.stop();
    await backend?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('finds nothing under another case or a trailing space, and changes nothing through it', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'exact' },
      params: { seconds: 30 },
    });
    expect(id).toMatch(/[A-Z]/);
    const lower = id.toLowerCase();
    expect((await api.call('GET', `/v1/tasks/${id}`)).status).toBe(200);
    expect((await api.call('GET', `/v1/tasks/${lower}`)).status).toBe(404);
    expect((await api.call('GET', `/v1/tasks/${id}%20`)).status).toBe(404);
    expect((await api.call('POST', `/v1/tasks/${lower}/cancel`)).status).toBe(404);
    expect((await api.task(id)).cancel_requested).toBeFalsy();
    await api.call('POST', `/v1/tasks/${id}/cancel`);

    expect((await api.call('PATCH', '/v1/task-types/DEMO.ECHO', { max_retry: 7 })).status).toBe(
      404,
    );
    const echo = await api.call<{ max_retry: number }>('GET', '/v1/task-types/demo.echo');
    expect(echo.data.max_retry).not.toBe(7);

    // Signed, as a worker deregisters itself.
    const path = '/v1/workers/exact-w1';
    const signed = authHeaders(
      { mode: 'hmac', secret: SECRET },
      { method: 'DELETE', pathWithQuery: path, body: '' },
    );
    expect((await api.call('DELETE', path, undefined, signed)).status).toBe(404);
    const workers = await api.call<{ worker_id: string }[]>('GET', '/v1/workers');
    expect(workers.data.map((w) => w.worker_id)).toContain('Exact-W1');

    const timer = await api.call<{ timer_id: string }>('POST', '/v1/timers', {
      name: 'exact',
      schedule: { kind: 'cron', cron: '0 0 3 * * *' },
      task: { create_info: { task_type: 'demo.echo', task_name: 'exact' } },
    });
    expect(timer.status).toBe(201);
    const timerId = timer.data.timer_id;
    expect((await api.call('DELETE', `/v1/timers/${timerId.toLowerCase()}`)).status).toBe(404);
    expect((await api.call('GET', `/v1/timers/${timerId}`)).status).toBe(200);

    const rule = await api.call<{ rule_id: string }>('POST', '/v1/log-rules', {
      name: 'exact',
      sources: ['http:exact'],
      match: { regex: 'ERROR (?<what>\\w+)' },
      template: { create_info: { task_type: 'demo.echo', task_name: 'exact {{what}}' } },
    });
    expect([rule.status, rule.message]).toEqual([201, 'ok']);
    const ruleId = rule.data.rule_id;
    expect((await api.call('DELETE', `/v1/log-rules/${ruleId.toLowerCase()}`)).status).toBe(404);
    expect((await api.call('GET', `/v1/log-rules/${ruleId}`)).status).toBe(200);
  });

  it('200 concurrent cancels of one running task: each answered as the first, one cancel event, the task cancelled', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'storm' },
      params: { seconds: 60 },
    });
    await api.until(id, 'RUNNING', 30_000);
    const answers = await Promise.all(
      Array.from({ length: 200 }, () => api.call('POST', `/v1/tasks/${id}/cancel`)),
    );
    const statuses = answers.map((a) => a.status);
    // Each asking is answered like the first (the cancel is recorded), unless the task had
    // already finished under the cancel when it was read: that is refused like any finished task's.
    expect(
      answers
        .filter((a) => a.status !== 200 && !(a.status === 409 && /in FINISH/.test(a.message)))
        .map((a) => `${a.status} ${a.message}`),
    ).toEqual([]);
    const done = await api.until(id, 'FINISH', 60_000);
    expect(done).toMatchObject({ outcome: 'CANCELLED', cancel_requested: true });
    const cancels = (await api.events(id)).filter((e) => /cancel/i.test(e.reason));
    const notes = cancels.filter((e) => e.from === e.to);
    expect(notes).toHaveLength(1);
    // The lifecycle log names the API key that asked.
    const events = await api.events(id);
    expect(events[0]).toMatchObject({ to: 'INIT', actor: 'key:admin (BATON_ADMIN_KEY)' });
    expect(notes[0].actor).toBe('key:admin (BATON_ADMIN_KEY)');
    console.log(
      `200 cancels: ${statuses.filter((s) => s === 200).length} × 200, ${statuses.filter((s) => s === 409).length} × 409 (finished); cancel events ${cancels.map((e) => `${e.from}->${e.to}`).join(', ')}`,
    );
  });
});

/**
 * The general protections: a request rate limit per API key (per address without one) on the
 * public API, never on probes or workers' calls, and security headers on every answer.
 */
describe('rate limit and security headers', () => {
  let backend: Backend;
  let scheduler: RunningProcess;

  beforeAll(async () => {
    backend = embeddedBackend();
    // A limit low enough that 60 requests at once pass it even when a busy box spreads them over
    // several seconds (at 20 a second, one CI run spread them thin enough to see no 429).
    scheduler = await startScheduler(backend, { BATON_API_RATE_LIMIT: '5' });
  });

  afterAll(async () => {
    await scheduler?.stop();
    await backend?.cleanup();
  });

  it('answers past 5 requests a second with this key 429 and Retry-After, in the envelope; probes pass', async () => {
    const burst = async (path: string, headers: Record<string, string>) => {
      const answers = await Promise.all(
        Array.from({ length: 60 }, async () => {
          const res = await request(`${scheduler.url}${path}`, { headers });
          const body = (await res.body.json()) as { code: number; message: string };
          return {
            status: res.statusCode,
            retryAfter: res.headers['retry-after'],
            nosniff: res.headers['x-content-type-options'],
            body,
          };
        }),
      );
      return answers;
    };
    /**
     * Sends a burst until its answers hold every status of `want`. A busy box may shed requests
     * (503, back-pressure) before the limiter counts them: a burst it shed too much of is sent
     * again a second later. Any status but `want` and 503 fails.
     */
    /** The limiter's one-second window for these headers has room again (a call gets through). */
    const refilled = (headers: Record<string, string>): Promise<true> =>
      eventually(
        async () => {
          const res = await request(`${scheduler.url}/v1/tasks`, { headers });
          await res.body.dump();
          return res.statusCode === 429 ? undefined : true;
        },
        20_000,
        'room in the rate window',
      );
    const until = async <T extends { status: number }>(
      send: () => Promise<T[]>,
      want: number[],
      headers: Record<string, string>,
    ): Promise<T[]> => {
      let last: number[] = [];
      for (let tries = 0; tries < 20; tries++) {
        const answers = await send();
        last = answers.map((a) => a.status);
        expect(last.filter((s) => s !== 503 && !want.includes(s))).toEqual([]);
        if (want.every((w) => last.includes(w))) return answers;
        await refilled(headers);
      }
      throw new Error(`20 bursts and never all of ${want.join(', ')}: last ${last.join(' ')}`);
    };
    const keyed = await until(() => burst('/v1/tasks', AUTH), [200, 429], AUTH);
    const limited = keyed.filter((a) => a.status === 429);
    expect(limited[0]).toMatchObject({
      retryAfter: expect.stringMatching(/^\d+$/),
      nosniff: 'nosniff',
      body: { code: 42900, message: expect.stringMatching(/more than 5 requests a second/) },
    });
    // Without a key, or with made-up ones (each request its own), the address is what is
    // counted: refused 401, then 429.
    await refilled({});
    await until(() => burst('/v1/tasks', {}), [401, 429], {});
    await refilled({});
    let n = 0;
    await until(
      () =>
        Promise.all(
          Array.from({ length: 60 }, async () => {
            const res = await request(`${scheduler.url}/v1/tasks`, {
              headers: { authorization: `Bearer baton_made-up-${n++}-0123456789abcdef` },
            });
            await res.body.dump();
            return { status: res.statusCode };
          }),
        ),
      [401, 429],
      {},
    );
    // A public PUT is limited like any other call (only workers' own calls are not).
    await refilled(AUTH);
    await until(
      () =>
        Promise.all(
          Array.from({ length: 60 }, async () => {
            const res = await request(`${scheduler.url}/v1/tenants/team-x/limits`, {
              method: 'PUT',
              headers: { ...AUTH, 'content-type': 'application/json' },
              body: '{"rate_limit_per_sec":5}',
            });
            await res.body.dump();
            return { status: res.statusCode };
          }),
        ),
      [200, 429],
      AUTH,
    );
    // Probes are never limited.
    const probes = await burst('/health/live', {});
    expect(probes.every((a) => a.status === 200)).toBe(true);
  });

  it('sets security headers on API answers and keeps Swagger UI working', async () => {
    // An instance of its own without a rate limit: Swagger UI's page and its assets are eight
    // requests.
    const own = embeddedBackend();
    const plain = await startScheduler(own, { BATON_API_RATE_LIMIT: '0' });
    try {
      await securityHeaders(plain.url);
      // The page and its assets came over one kept-alive connection, and a client leaves a
      // request half sent: neither is idle, and Node would wait for them (up to its 300 s
      // request timeout) before a stop ends. A stop closes them itself: the process exits, well
      // within this test's own deadline, and the half-sent request's connection is closed.
      const { hostname, port } = new URL(plain.url);
      const half = connect(Number(port), hostname);
      await once(half, 'connect');
      // Closed by the stop, with a FIN or (on a busy box) a reset: either ends it.
      half.on('error', () => undefined);
      const closed = new Promise<void>((resolve) => half.once('close', () => resolve()));
      half.write(
        'POST /v1/tasks HTTP/1.1\r\nHost: baton\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"create_info":',
      );
      await plain.stop();
      await closed;
    } finally {
      await plain.stop();
      await own.cleanup();
    }
  });
});

/** Security headers on an API answer, and Swagger UI whole under its content security policy. */
async function securityHeaders(url: string): Promise<void> {
  const headers = {
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'SAMEORIGIN',
    'strict-transport-security': expect.any(String),
  };
  // A fresh instance on a busy box may shed the first requests (503, back-pressure): that answer
  // carries the headers too, and the request is sent again, as a client would.
  const api = await eventually(async () => {
    const res = await request(`${url}/v1/tasks`, { headers: AUTH });
    await res.body.dump();
    expect({ status: res.statusCode, headers: res.headers }).toMatchObject({ headers });
    return res.statusCode === 503 ? undefined : res;
  }, 30_000);
  expect(api.statusCode).toBe(200);
  const docs = await request(`${url}/docs`);
  const html = await docs.body.text();
  expect(docs.statusCode).toBe(200);
  expect(String(docs.headers['content-security-policy'])).toMatch(/default-src 'self'/);
  // Its scripts and styles come from the scheduler itself, which the policy allows.
  for (const src of html.matchAll(/(?:src|href)="(\.\/[^"]+)"/g)) {
    const asset = await request(new URL(src[1], `${url}/docs`).toString());
    await asset.body.dump();
    expect({ asset: src[1], status: asset.statusCode }).toEqual({ asset: src[1], status: 200 });
  }
}
