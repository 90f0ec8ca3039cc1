import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Api,
  Backend,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { ROOT, RunningProcess, eventually } from './support/processes';

jest.setTimeout(180_000);

interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
}

/** Every operation of the scheduler's OpenAPI document that takes an API key. */
function keyRoutes(): Route[] {
  const doc = JSON.parse(readFileSync(join(ROOT, 'openapi', 'scheduler.v1.json'), 'utf8')) as {
    paths: Record<string, Record<string, { security?: Record<string, unknown>[] }>>;
  };
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([, op]) => (op.security ?? []).some((s) => 'api-key' in s))
      .map(([method, _op]) => ({ method: method.toUpperCase() as Route['method'], path })),
  );
}

const echo = (name: string, extra: Record<string, unknown> = {}) => ({
  create_info: { task_type: 'demo.echo', task_name: name },
  ...extra,
});

/**
 * What a key of tenant `beta` sends to each route that takes a body: a body an admin could send
 * with success, aimed at tenant `alpha` wherever the body can name a tenant. A new route that
 * takes a body must be added here (the walk fails on a route it has no body for).
 */
const FOREIGN_BODIES: Record<string, unknown> = {
  'POST /v1/api-keys': { name: 'beta-made', role: 'admin' },
  'PATCH /v1/task-types/{task_type}': { max_concurrency: 1 },
  'PUT /v1/tenants/{tenant}/limits': { rate_limit_per_sec: 1 },
  'POST /v1/workers/{worker_id}/drain': {},
  'POST /v1/workers/{worker_id}/blacklist': { reason: 'foreign' },
  'POST /v1/tasks': echo('foreign', { tenant: 'alpha' }),
  'POST /v1/tasks/batch': { tasks: [echo('mine'), echo('foreign', { tenant: 'alpha' })] },
  'POST /v1/tasks/{task_id}/pause': {},
  'POST /v1/tasks/{task_id}/continue': {},
  'POST /v1/tasks/{task_id}/cancel': {},
  'POST /v1/tasks/{task_id}/retry': {},
  'POST /v1/tasks/{task_id}/rollback': {},
  'POST /v1/tasks/{task_id}/rerun': {},
  'PUT /v1/tasks/{task_id}/params': { params: { changed: true } },
  'POST /v1/timers': {
    name: 'foreign',
    schedule: { kind: 'cron', cron: '0 0 4 * * *' },
    task: echo('foreign', { tenant: 'alpha' }),
  },
  'POST /v1/timers/preview': {
    name: 'foreign',
    schedule: { kind: 'interval', every_ms: 60_000 },
    task: echo('foreign', { tenant: 'alpha' }),
  },
  'PATCH /v1/timers/{timer_id}': { name: 'taken over', enabled: false },
  // Run now takes no body; none is needed to try another tenant's timer.
  'POST /v1/timers/{timer_id}/run': {},
  'POST /v1/log-rules': {
    name: 'foreign',
    match: { regex: 'x' },
    template: echo('foreign', { tenant: 'alpha' }),
  },
  'POST /v1/log-rules/test': {
    rule: {
      name: 'foreign',
      match: { regex: 'x' },
      template: echo('foreign', { tenant: 'alpha' }),
    },
    line: 'x',
  },
  'PATCH /v1/log-rules/{rule_id}': { enabled: false },
  'POST /v1/logs': { source: 'shared', tenant: 'alpha', records: [{ position: 1, line: 'x' }] },
  'POST /v1/webhooks': {
    url: 'https://hooks.example.com/foreign',
    events: ['task.finished'],
    tenant: 'alpha',
  },
  'POST /v1/webhooks/callback-secret': {},
  'PATCH /v1/webhooks/{webhook_id}': { enabled: true },
  'POST /v1/webhooks/{webhook_id}/rotate-secret': {},
  'POST /v1/webhooks/{webhook_id}/test': {},
  'POST /v1/webhooks/{webhook_id}/deliveries/{message_id}/redeliver': {},
  'POST /v1/webhooks/{webhook_id}/redeliver': { since: '2026-01-01T00:00:00Z' },
  'POST /v1/topologies': {
    name: 'beta-flow',
    tenant: 'alpha',
    nodes: [{ key: 'a', task: echo('a') }],
  },
  'POST /v1/topologies/check': { name: 'beta-flow', nodes: [{ key: 'a', task: echo('a') }] },
  'POST /v1/topologies/{topology}/runs': { input: {} },
  'POST /v1/topology-runs/{run_id}/cancel': {},
  'POST /v1/topology-runs/{run_id}/pause': {},
  'POST /v1/topology-runs/{run_id}/continue': {},
  'POST /v1/topology-runs/{run_id}/signal': { signal: 'approved' },
  'POST /v1/topology-runs/{run_id}/retry': {},
  'POST /v1/topology-runs/{run_id}/nodes/{node}/rerun': {},
  'POST /v1/topology-runs/{run_id}/nodes/{node}/skip': {},
  'POST /v1/topology-runs/{run_id}/nodes/{node}/approve': { comment: 'beta says yes' },
  'POST /v1/topology-runs/{run_id}/nodes/{node}/reject': { comment: 'beta says no' },
};

/** Routes over every tenant's data or the shared fleet: a tenant's key is refused them. */
const ALL_TENANTS = new Set([
  'GET /v1/producer',
  'GET /v1/logs/stats',
  'GET /v1/task-counts',
  'GET /v1/task-counts/history',
  'GET /v1/task-counts/backlog',
  'POST /v1/workers/{worker_id}/drain',
  'DELETE /v1/workers/{worker_id}/drain',
  'POST /v1/workers/{worker_id}/blacklist',
  'DELETE /v1/workers/{worker_id}/blacklist',
]);
/** Routes for admins only: refused to every key of one tenant (admin keys span all tenants). */
const ADMIN_ONLY = /^\/v1\/(api-keys|audit)|^(PATCH|PUT|DELETE) \/v1\/(task-types|tenants)/;

describe('tenants: a key of one tenant sees and changes only its own', () => {
  let backend: Backend;
  let dir: string;
  let scheduler: RunningProcess;
  let worker: RunningProcess;
  let admin: Api;
  const keys: Record<string, Api> = {};
  const ids: Record<string, string> = {};

  const makeKey = async (name: string, role: string, tenant?: string): Promise<Api> => {
    const made = await admin.call<{ key: string; key_id: string; tenant: string | null }>(
      'POST',
      '/v1/api-keys',
      { name, role, ...(tenant ? { tenant } : {}) },
    );
    expect([made.status, made.data.tenant]).toEqual([201, tenant ?? null]);
    ids[`key:${name}`] = made.data.key_id;
    return new Api(scheduler.url, made.data.key);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-tenants-'));
    backend = embeddedBackend();
    scheduler = await startScheduler(backend);
    worker = await startTemplateWorker('tenants-w1', scheduler.url, join(dir, 'runs.jsonl'));
    admin = new Api(scheduler.url);
    await admin.waitForWorkers(1, 30_000);
    keys.alpha = await makeKey('alpha-operator', 'operator', 'alpha');
    keys.beta = await makeKey('beta-operator', 'operator', 'beta');
    keys.betaViewer = await makeKey('beta-viewer', 'viewer', 'beta');
  });

  afterAll(async () => {
    await worker?.stop();
    await scheduler?.stop();
    await backend?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("creates in the key's tenant, refuses another tenant with 403, and lists its own only", async () => {
    const made = await keys.alpha.call<{ task_id: string; tenant: string }>(
      'POST',
      '/v1/tasks',
      echo('alpha-1'),
    );
    expect([made.status, made.data.tenant]).toEqual([201, 'alpha']);
    const foreign = await keys.alpha.call('POST', '/v1/tasks', echo('x', { tenant: 'beta' }));
    expect([foreign.status, foreign.code, foreign.data]).toEqual([403, 40300, { tenant: 'beta' }]);
    const batch = await keys.alpha.call('POST', '/v1/tasks/batch', {
      tasks: [echo('ok'), echo('x', { tenant: 'beta' })],
    });
    expect(batch.status).toBe(403);
    // A shape the tenant check cannot see into is refused, not trusted to fail validation.
    const nested = { tasks: [[echo('x', { tenant: 'beta' })]] };
    expect((await keys.alpha.call('POST', '/v1/tasks/batch', nested)).status).toBe(403);
    expect((await admin.call('POST', '/v1/tasks/batch', nested)).status).toBe(400);
    const betaTask = await keys.beta.call<{ task_id: string }>('POST', '/v1/tasks', echo('b'));
    expect(betaTask.status).toBe(201);

    const alphaList = await keys.alpha.call<{ items: { tenant: string }[] }>('GET', '/v1/tasks');
    expect(alphaList.data.items.map((t) => t.tenant)).toEqual(['alpha']);
    // Refused wholly, not only the foreign task: nothing of the batch was made, nothing in beta.
    const betaList = await admin.call<{ items: { task_name: string }[] }>(
      'GET',
      '/v1/tasks?tenant=beta',
    );
    expect(betaList.data.items.map((t) => t.task_name)).toEqual(['b']);
    expect((await keys.alpha.call('GET', '/v1/tasks?tenant=beta')).status).toBe(403);
    const all = await admin.call<{ items: { tenant: string }[] }>('GET', '/v1/tasks');
    expect(new Set(all.data.items.map((t) => t.tenant))).toEqual(new Set(['alpha', 'beta']));
    // A viewer of beta reads beta's task, and cannot act on it.
    const read = await keys.betaViewer.call('GET', `/v1/tasks/${betaTask.data.task_id}`);
    expect(read.status).toBe(200);
    const act = await keys.betaViewer.call('POST', `/v1/tasks/${betaTask.data.task_id}/cancel`);
    expect(act.status).toBe(403);
  });

  it("keeps idempotency keys apart per tenant: another tenant's key and body do not answer its task", async () => {
    const body = echo('deploy', { idempotency_key: 'deploy-42' });
    const first = await keys.alpha.call<{ task_id: string }>('POST', '/v1/tasks', body);
    expect(first.status).toBe(201);
    const again = await keys.alpha.call<{ task_id: string }>('POST', '/v1/tasks', body);
    expect([again.status, again.data.task_id]).toEqual([200, first.data.task_id]);
    // The same key from beta is beta's own: a new task, never alpha's.
    const beta = await keys.beta.call<{ task_id: string; tenant: string }>(
      'POST',
      '/v1/tasks',
      body,
    );
    expect(beta.status).toBe(201);
    expect(beta.data.task_id).not.toBe(first.data.task_id);
    expect(beta.data.tenant).toBe('beta');
    const named = await keys.beta.call('POST', '/v1/tasks', { ...body, tenant: 'alpha' });
    expect(named.status).toBe(403);
    expect(JSON.stringify(named)).not.toContain(first.data.task_id);
    // The Idempotency-Key header is scoped the same way.
    const headerBody = echo('header');
    const h1 = await keys.alpha.call<{ task_id: string }>('POST', '/v1/tasks', headerBody, {
      'idempotency-key': 'hdr-1',
    });
    const h2 = await keys.beta.call<{ task_id: string }>('POST', '/v1/tasks', headerBody, {
      'idempotency-key': 'hdr-1',
    });
    expect([h1.status, h2.status]).toEqual([201, 201]);
    expect(h2.data.task_id).not.toBe(h1.data.task_id);
  });

  it('lets log records from a key of one tenant reach only the rules of that tenant', async () => {
    const rule = await keys.alpha.call<{ rule_id: string }>('POST', '/v1/log-rules', {
      name: 'alpha disk',
      sources: ['http:shared-src'],
      match: { regex: 'disk full on (?<host>\\w+)' },
      template: echo('clean {{host}}'),
    });
    expect(rule.status).toBe(201);
    const line = { source: 'shared-src', records: [{ position: 1, line: 'disk full on db1' }] };
    const fromBeta = await keys.beta.call<{ matched: number; created: number }>(
      'POST',
      '/v1/logs',
      line,
    );
    expect([fromBeta.status, fromBeta.data.matched, fromBeta.data.created]).toEqual([200, 0, 0]);
    const fromAlpha = await keys.alpha.call<{ created: number }>('POST', '/v1/logs', {
      ...line,
      records: [{ position: 2, line: 'disk full on db2' }],
    });
    expect([fromAlpha.status, fromAlpha.data.created]).toEqual([200, 1]);
    // The rule is alpha's: records ingested for no tenant (an admin's, a file's, a stream's) are
    // not alpha's logs, and never reach it.
    const stored = await admin.call<{ tenant: string | null }>(
      'GET',
      `/v1/log-rules/${rule.data.rule_id}`,
    );
    expect(stored.data.tenant).toBe('alpha');
    const fromAdmin = await admin.call<{ matched: number }>('POST', '/v1/logs', {
      ...line,
      records: [{ position: 3, line: 'disk full on db3' }],
    });
    expect([fromAdmin.status, fromAdmin.data.matched]).toEqual([200, 0]);
    const forAlpha = await admin.call<{ created: number }>('POST', '/v1/logs', {
      ...line,
      tenant: 'alpha',
      records: [{ position: 4, line: 'disk full on db4' }],
    });
    expect(forAlpha.data.created).toBe(1);
    const made = await admin.call<{ items: { tenant: string; task_name: string }[] }>(
      'GET',
      '/v1/tasks?limit=500',
    );
    const cleans = made.data.items.filter((t) => t.task_name.startsWith('clean '));
    expect(cleans.map((t) => [t.tenant, t.task_name]).sort()).toEqual([
      ['alpha', 'clean db2'],
      ['alpha', 'clean db4'],
    ]);
    const rules = await keys.beta.call<unknown[]>('GET', '/v1/log-rules');
    expect(rules.data).toEqual([]);
  });

  it("counts the requests of a tenant's keys in one bucket: more keys do not buy more requests", async () => {
    const own = embeddedBackend();
    const limited = await startScheduler(own, { BATON_API_RATE_LIMIT: '10' });
    try {
      const boss = new Api(limited.url);
      const key = async (name: string, tenant?: string) => {
        const made = await boss.call<{ key: string }>('POST', '/v1/api-keys', {
          name,
          role: 'viewer',
          ...(tenant ? { tenant } : {}),
        });
        return new Api(limited.url, made.data.key);
      };
      const burst = async (a: Api, b: Api, n = 20): Promise<number[]> =>
        (
          await Promise.all(
            Array.from({ length: n }, (_, i) => (i % 2 ? a : b).call('GET', '/v1/task-types')),
          )
        ).map((r) => r.status);
      // Two keys of one tenant, 20 requests each at once: past the tenant's 10, refused. Even a
      // round that a slow box spreads across two windows of the limiter (20 let in) has some
      // refused; one spread wider is tried again.
      let refused = 0;
      for (let round = 0; round < 5 && refused === 0; round++) {
        refused = (
          await burst(await key(`g1-${round}`, 'gamma'), await key(`g2-${round}`, 'gamma'), 40)
        ).filter((st) => st === 429).length;
      }
      expect(refused).toBeGreaterThan(0);
      // Two keys of no tenant have a bucket each: 10 each at once are all answered.
      // The admin key that makes them has room in its window again.
      await eventually(
        async () => ((await boss.call('GET', '/v1/task-types')).status === 429 ? undefined : true),
        20_000,
        'room in the rate window',
      );
      const open = await burst(await key('n1'), await key('n2'));
      expect(open.filter((st) => st === 429)).toEqual([]);
    } finally {
      await limited.stop();
      await own.cleanup();
    }
  });

  it('walks every route of the OpenAPI document with a foreign key: nothing of alpha is read or changed', async () => {
    // alpha's things, made by alpha's key: a task, a timer, a log rule; limits set by an admin.
    const task = await keys.alpha.call<{ task_id: string }>(
      'POST',
      '/v1/tasks',
      echo('walked', { params: { secret: 'alpha-secret-param' } }),
    );
    await admin.until(task.data.task_id);
    const timer = await keys.alpha.call<{ timer_id: string }>('POST', '/v1/timers', {
      name: 'alpha nightly',
      schedule: { kind: 'cron', cron: '0 0 3 * * *' },
      task: echo('nightly'),
    });
    const rule = await keys.alpha.call<{ rule_id: string }>('POST', '/v1/log-rules', {
      name: 'alpha walked rule',
      match: { regex: 'walk' },
      template: echo('walk'),
    });
    const limits = await admin.call('PUT', '/v1/tenants/alpha/limits', {
      rate_limit_per_sec: 7,
    });
    // Disabled: its test message waits, so nothing of it changes while the walk runs.
    const hook = await keys.alpha.call<{ webhook_id: string }>('POST', '/v1/webhooks', {
      url: 'https://hooks.example.com/alpha',
      events: ['task.finished'],
      description: 'alpha hook',
      enabled: false,
    });
    const ping = await keys.alpha.call<{ message_id: string }>(
      'POST',
      `/v1/webhooks/${hook.data.webhook_id}/test`,
    );
    expect([task.status, timer.status, rule.status, limits.status]).toEqual([201, 201, 201, 200]);
    expect([hook.status, ping.status]).toEqual([201, 202]);
    // A definition of alpha's, and a run of it that waits (nothing of it moves during the walk):
    // for a signal, and for a person's approval (which beta must neither see nor decide).
    const flow = await keys.alpha.call('POST', '/v1/topologies', {
      name: 'alpha-flow',
      description: 'alpha walked flow',
      nodes: [
        { key: 'approve', wait: { signal: 'approved' } },
        {
          key: 'gate',
          approval: { timeout_seconds: 3600, on_timeout: 'reject', message: 'alpha asks' },
        },
      ],
    });
    const run = await keys.alpha.call<{ run_id: string }>(
      'POST',
      '/v1/topologies/alpha-flow/runs',
      {},
    );
    expect([flow.status, run.status]).toEqual([201, 201]);
    await eventually(
      async () =>
        (
          await admin.call<{ nodes: { status: string }[] }>(
            'GET',
            `/v1/topology-runs/${run.data.run_id}`,
          )
        ).data.nodes[0].status === 'ACTIVE'
          ? true
          : undefined,
      30_000,
      "alpha's run waiting",
    );
    const workers = await admin.call<{ worker_id: string }[]>('GET', '/v1/workers');
    const params: Record<string, string> = {
      task_id: task.data.task_id,
      timer_id: timer.data.timer_id,
      rule_id: rule.data.rule_id,
      tenant: 'alpha',
      task_type: 'demo.echo',
      worker_id: workers.data[0].worker_id,
      key_id: ids['key:alpha-operator'],
      webhook_id: hook.data.webhook_id,
      message_id: ping.data.message_id,
      topology: 'alpha-flow',
      run_id: run.data.run_id,
      node: 'approve',
      attempt: '1',
    };
    // What no answer to beta may hold: alpha's ids and names.
    const secrets = [
      task.data.task_id,
      timer.data.timer_id,
      rule.data.rule_id,
      'alpha-secret-param',
      'alpha nightly',
      'alpha walked rule',
      hook.data.webhook_id,
      ping.data.message_id,
      'alpha hook',
      'alpha-flow',
      'alpha walked flow',
      'alpha asks',
      run.data.run_id,
      '"alpha"',
    ];
    const snapshot = async () =>
      JSON.stringify(
        await Promise.all([
          admin.call('GET', `/v1/tasks/${task.data.task_id}`),
          admin.call('GET', `/v1/tasks/${task.data.task_id}/events`),
          admin.call('GET', `/v1/timers/${timer.data.timer_id}`),
          admin.call('GET', `/v1/log-rules/${rule.data.rule_id}`),
          admin.call('GET', '/v1/tenants/alpha/limits'),
          admin.call('GET', '/v1/tasks?tenant=alpha&limit=500'),
          admin.call('GET', '/v1/timers?tenant=alpha'),
          admin.call('GET', '/v1/log-rules?tenant=alpha'),
          admin.call('GET', '/v1/webhooks?tenant=alpha'),
          admin.call('GET', `/v1/webhooks/${hook.data.webhook_id}/deliveries`),
          admin.call('GET', '/v1/topologies/alpha-flow/versions'),
          admin.call('GET', `/v1/topology-runs/${run.data.run_id}`),
          admin.call('GET', '/v1/topology-runs?tenant=alpha'),
          admin.call('GET', `/v1/topology-runs/${run.data.run_id}/history`),
          admin
            .call<{ key_id: string; name: string; revoked_at: string | null }[]>(
              'GET',
              '/v1/api-keys',
            )
            .then((k) => k.data.map(({ key_id, name, revoked_at }) => [key_id, name, revoked_at])),
        ]),
      );
    // Nothing of alpha moves by itself meanwhile: every task of it has ended.
    await eventually(
      async () => {
        const list = await admin.call<{
          items: { task_name: string; task_type: string; task_status: string }[];
        }>('GET', '/v1/tasks?tenant=alpha&limit=500');
        // (alpha's run waits for a signal: its centre task stays RUNNING, and nothing moves it.)
        const open = list.data.items.filter(
          (t) => t.task_status !== 'FINISH' && t.task_type !== 'topology',
        );
        if (open.length === 0) return true;
        throw new Error(
          `still open: ${JSON.stringify(open.map((t) => [t.task_name, t.task_status]))}`,
        );
      },
      30_000,
      "alpha's tasks to finish",
    );
    const before = await snapshot();

    const routes = keyRoutes();
    expect(routes.length).toBeGreaterThan(30);
    const seen: string[] = [];
    for (const [who, key] of [
      ['beta operator', keys.beta],
      ['beta viewer', keys.betaViewer],
    ] as const) {
      for (const r of routes) {
        const name = `${r.method} ${r.path}`;
        const path = r.path.replace(/\{([a-z_]+)\}/g, (_, p: string) => {
          expect({ route: name, param: p, known: p in params }).toEqual({
            route: name,
            param: p,
            known: true,
          });
          return encodeURIComponent(params[p]);
        });
        const takesBody = r.method !== 'GET' && r.method !== 'DELETE';
        if (takesBody)
          expect({ route: name, body: name in FOREIGN_BODIES }).toEqual({
            route: name,
            body: true,
          });
        // The live stream is ended by the scheduler after a second, so its answer can be read.
        const query = name.endsWith('/stream') ? '?max_seconds=1' : '';
        const res = await key.call(
          r.method,
          `${path}${query}`,
          takesBody ? FOREIGN_BODIES[name] : undefined,
        );
        const owned =
          /\{(task_id|timer_id|rule_id|tenant|webhook_id|message_id|topology|run_id)\}/.test(
            r.path,
          );
        const names = takesBody && JSON.stringify(FOREIGN_BODIES[name]).includes('"alpha"');
        const readOnly = who === 'beta viewer' && r.method !== 'GET';
        const expected =
          ADMIN_ONLY.test(r.path) || ADMIN_ONLY.test(name) || ALL_TENANTS.has(name) || readOnly
            ? 403
            : owned
              ? 404
              : names
                ? 403
                : 200;
        expect({ who, route: name, status: res.status }).toEqual({
          who,
          route: name,
          status: expected,
        });
        // The answer may echo what was sent (a 404 names the id asked for), nothing more.
        const text = JSON.stringify(res);
        const sent = `${decodeURIComponent(path)} ${JSON.stringify(FOREIGN_BODIES[name] ?? '')}`;
        for (const s of secrets.filter((x) => !sent.includes(x.replace(/"/g, ''))))
          expect({ who, route: name, leaks: text.includes(s) ? s : null }).toEqual({
            who,
            route: name,
            leaks: null,
          });
        seen.push(`${who}: ${name} → ${res.status}`);
      }
    }
    console.log(`foreign tenant walk:\n${seen.join('\n')}`);
    expect(await snapshot()).toEqual(before);
  });
});
