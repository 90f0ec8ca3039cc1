import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { ADMIN_KEY, Backend, embeddedBackend, startScheduler } from './support/baton';
import { ROOT, RunningProcess, eventually } from './support/processes';

jest.setTimeout(120_000);

type Role = 'viewer' | 'operator' | 'admin';
type Rule = 'read' | 'operate' | 'admin';

interface Route {
  method: string;
  path: string;
  security: string[];
}

/** Every operation of the scheduler's OpenAPI document, with the security schemes it names. */
function routes(): Route[] {
  const doc = JSON.parse(readFileSync(join(ROOT, 'openapi', 'scheduler.v1.json'), 'utf8')) as {
    paths: Record<string, Record<string, { security?: Record<string, unknown>[] }>>;
  };
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      security: (op.security ?? []).flatMap((s) => Object.keys(s)),
    })),
  );
}

/** Routes that take no credentials at all: probes and metrics. */
const PUBLIC = /^\/(health|metrics)(\/|$)/;

/**
 * The role each route needs, as docs/operations.md states it: reads are for every key; task
 * types, tenants' limits and API keys are changed by admins only (keys and the audit log are
 * read by them only too);
 * everything else that changes something needs an operator.
 */
function ruleOf(r: Route): Rule {
  if (r.path.startsWith('/v1/api-keys') || r.path.startsWith('/v1/audit')) return 'admin';
  if (r.method === 'GET') return 'read';
  if (/^\/v1\/(task-types|tenants)/.test(r.path)) return 'admin';
  return 'operate';
}

const ALLOWED: Record<Role, Rule[]> = {
  viewer: ['read'],
  operator: ['read', 'operate'],
  admin: ['read', 'operate', 'admin'],
};

describe('API keys: who may call what', () => {
  let backend: Backend;
  let dir: string;
  let scheduler: RunningProcess;

  const call = async (
    method: string,
    path: string,
    key?: string,
    body?: unknown,
  ): Promise<{ status: number; code: number; message: string; data: unknown }> => {
    // The live stream is ended by the scheduler after a second, so its answer can be read.
    const query = path === '/v1/task-changes/stream' ? '?max_seconds=1' : '';
    const res = await request(`${scheduler.url}${path}${query}`, {
      method: method as 'GET',
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!String(res.headers['content-type']).startsWith('application/json'))
      return { status: res.statusCode, code: 0, message: await res.body.text(), data: null };
    const json = (await res.body.json()) as { code: number; message: string; data: unknown };
    return { status: res.statusCode, ...json };
  };

  const makeKey = async (
    name: string,
    role: Role,
    extra: Record<string, unknown> = {},
  ): Promise<{ key: string; key_id: string }> => {
    const res = await call('POST', '/v1/api-keys', ADMIN_KEY, { name, role, ...extra });
    expect([res.status, res.message]).toEqual([201, 'ok']);
    return res.data as { key: string; key_id: string };
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-keys-'));
    backend = embeddedBackend();
    scheduler = await startScheduler(backend);
  });

  afterAll(async () => {
    await scheduler?.stop();
    await backend?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('every route of the OpenAPI document names its credentials, and refuses a call without them', async () => {
    const all = routes();
    expect(all.length).toBeGreaterThan(30);
    for (const r of all) {
      // A new route must say who may call it: an API key, a worker's signature, or nothing.
      const kind = r.security.includes('api-key')
        ? 'key'
        : r.security.includes('hmac')
          ? 'worker'
          : PUBLIC.test(r.path)
            ? 'public'
            : 'none';
      expect({ route: `${r.method} ${r.path}`, kind }).not.toEqual({
        route: `${r.method} ${r.path}`,
        kind: 'none',
      });
      if (kind === 'public') continue;
      const path = r.path.replace(/\{[a-z_]+\}/g, 'x');
      const res = await call(r.method, path, undefined, r.method === 'GET' ? undefined : {});
      expect({ route: `${r.method} ${r.path}`, status: res.status }).toEqual({
        route: `${r.method} ${r.path}`,
        status: 401,
      });
      if (kind === 'key') {
        expect(res.code).toBe(40100);
        expect(res.message).toMatch(/API key is required/);
      }
      // A key of any role is no worker's signature.
      if (kind === 'worker') expect((await call(r.method, path, ADMIN_KEY, {})).status).toBe(401);
    }
  });

  it('each role against each route: allowed, or 403 as the role table says', async () => {
    const keys: Record<Role, string> = {
      viewer: (await makeKey('table-viewer', 'viewer')).key,
      operator: (await makeKey('table-operator', 'operator')).key,
      admin: ADMIN_KEY,
    };
    const table: string[] = [];
    for (const r of routes().filter((x) => x.security.includes('api-key'))) {
      const rule = ruleOf(r);
      const path = r.path.replace(/\{[a-z_]+\}/g, 'x');
      const row: string[] = [];
      for (const role of ['viewer', 'operator', 'admin'] as Role[]) {
        const res = await call(r.method, path, keys[role], r.method === 'GET' ? undefined : {});
        const allowed = ALLOWED[role].includes(rule);
        const seen =
          res.status === 403 ? 'refused' : res.status === 401 ? 'unauthenticated' : 'allowed';
        expect({ route: `${r.method} ${r.path}`, role, seen }).toEqual({
          route: `${r.method} ${r.path}`,
          role,
          seen: allowed ? 'allowed' : 'refused',
        });
        if (!allowed) expect(res.code).toBe(40300);
        row.push(allowed ? role : '-');
      }
      table.push(`${r.method.padEnd(6)} ${r.path.padEnd(40)} ${rule.padEnd(8)} ${row.join(' ')}`);
    }
    console.log(`role × route:\n${table.join('\n')}`);
  });

  it('shows a secret once, keeps only its hash, and a revoked key is refused from the next call', async () => {
    const made = await makeKey('revoke-me', 'operator');
    expect(made.key).toMatch(/^baton_[A-Za-z0-9_-]{32}$/);
    expect((await call('GET', '/v1/tasks', made.key)).status).toBe(200);
    const listed = (await call('GET', '/v1/api-keys', ADMIN_KEY)).data as Record<string, unknown>[];
    const mine = listed.find((k) => k.name === 'revoke-me');
    expect(mine).toMatchObject({
      role: 'operator',
      prefix: made.key.slice(0, 12),
      revoked_at: null,
    });
    expect(JSON.stringify(listed)).not.toContain(made.key);
    const file = readFileSync(backend.env.BATON_DB_PATH!);
    expect(file.includes(Buffer.from(made.key))).toBe(false);

    const revoked = await call('DELETE', `/v1/api-keys/${made.key_id}`, ADMIN_KEY);
    expect(revoked.status).toBe(200);
    const after = await call('GET', '/v1/tasks', made.key);
    expect([after.status, after.code]).toEqual([401, 40100]);
    expect(after.message).toMatch(/revoked/);
  });

  it('refuses an expired key, a wrong one, a duplicate name and an admin key of one tenant', async () => {
    const expiresAt = Date.now() + 3000;
    const made = await makeKey('short-lived', 'viewer', {
      expires_at: new Date(expiresAt).toISOString(),
    });
    expect((await call('GET', '/v1/tasks', made.key)).status).toBe(200);
    const expired = await eventually(
      async () => {
        const r = await call('GET', '/v1/tasks', made.key);
        return r.status === 401 ? r : undefined;
      },
      30_000,
      'the key refused once expired',
    );
    expect([expired.status, expired.message]).toEqual([401, expect.stringMatching(/expired/)]);
    const wrong = await call('GET', '/v1/tasks', `${made.key}x`);
    expect([wrong.status, wrong.message]).toEqual([401, 'unknown API key']);
    const again = await call('POST', '/v1/api-keys', ADMIN_KEY, {
      name: 'short-lived',
      role: 'viewer',
    });
    expect(again.status).toBe(409);
    // An admin key spans every tenant: one limited to a tenant is refused, not made wider.
    const scoped = await call('POST', '/v1/api-keys', ADMIN_KEY, {
      name: 'scoped',
      role: 'admin',
      tenant: 'team-a',
    });
    expect([scoped.status, scoped.code, scoped.message]).toEqual([
      400,
      40000,
      expect.stringMatching(/admin key spans every tenant/),
    ]);
    const badTenant = await call('POST', '/v1/api-keys', ADMIN_KEY, {
      name: 'scoped',
      role: 'viewer',
      tenant: 'Team A',
    });
    expect([badTenant.status, badTenant.message]).toEqual([
      400,
      'tenant must be a lower-case name',
    ]);
  });

  it('names the key in the lifecycle log and in the audit log of every configuration change', async () => {
    const operator = await makeKey('audit-operator', 'operator');
    const task = await call('POST', '/v1/tasks', operator.key, {
      create_info: { task_type: 'no.worker.yet', task_name: 'x' },
    });
    // No worker has declared that type: refused, and nothing is audited for a refused change.
    expect(task.status).toBe(400);
    const timer = await call('POST', '/v1/timers', operator.key, {
      name: 'audited',
      schedule: { kind: 'cron', cron: '0 0 3 * * *' },
      task: { create_info: { task_type: 'no.worker.yet', task_name: 'x' } },
    });
    expect(timer.status).toBe(400);
    const limits = await call('PUT', '/v1/tenants/team-a/limits', ADMIN_KEY, {
      rate_limit_per_sec: 5,
    });
    expect(limits.status).toBe(200);
    const refused = await call('PUT', '/v1/tenants/team-a/limits', operator.key, {
      rate_limit_per_sec: 50,
    });
    expect(refused.status).toBe(403);
    await call('DELETE', `/v1/api-keys/${operator.key_id}`, ADMIN_KEY);

    const audit = await call('GET', '/v1/audit?limit=10', ADMIN_KEY);
    expect(audit.status).toBe(200);
    const entries = audit.data as {
      actor: string;
      action: string;
      target: string;
      detail: unknown;
    }[];
    const admin = 'key:admin (BATON_ADMIN_KEY)';
    expect(entries.slice(0, 3)).toEqual([
      expect.objectContaining({ actor: admin, action: 'api-key.revoke', target: operator.key_id }),
      expect.objectContaining({
        actor: admin,
        action: 'tenant-limits.set',
        target: 'team-a',
        detail: { rate_limit_per_sec: 5 },
      }),
      expect.objectContaining({
        actor: admin,
        action: 'api-key.create',
        target: operator.key_id,
        detail: { name: 'audit-operator', role: 'operator' },
      }),
    ]);
    // The secret is in no entry.
    expect(JSON.stringify(entries)).not.toContain(operator.key);
    const byAction = await call('GET', '/v1/audit?action=tenant-limits.set', ADMIN_KEY);
    const sets = byAction.data as { action: string; target: string }[];
    expect(sets.every((e) => e.action === 'tenant-limits.set')).toBe(true);
    expect(sets.map((e) => e.target)).toContain('team-a');
  });

  it('keeps BATON_ADMIN_KEY refused once revoked, across a restart', async () => {
    const ownDb = embeddedBackend();
    const env = { BATON_ADMIN_KEY: 'baton_env-key-to-revoke-0123456789' };
    const first = await startScheduler(ownDb, env);
    const keys = (await request(`${first.url}/v1/api-keys`, {
      headers: { authorization: `Bearer ${env.BATON_ADMIN_KEY}` },
    }).then((r) => r.body.json())) as { data: { key_id: string; name: string }[] };
    const own = keys.data.find((k) => k.name === 'admin (BATON_ADMIN_KEY)');
    const revoked = await request(`${first.url}/v1/api-keys/${own!.key_id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${env.BATON_ADMIN_KEY}` },
    });
    expect(revoked.statusCode).toBe(200);
    await revoked.body.dump();
    await first.stop();
    const second = await startScheduler(ownDb, env);
    try {
      const res = await request(`${second.url}/v1/tasks`, {
        headers: { authorization: `Bearer ${env.BATON_ADMIN_KEY}` },
      });
      expect(res.statusCode).toBe(401);
      await res.body.dump();
      expect(second.output()).toMatch(/BATON_ADMIN_KEY was revoked/);
    } finally {
      await second.stop();
      await ownDb.cleanup();
    }
  });

  it('BATON_API_AUTH=off takes every call without a key, and says so at every start', async () => {
    const open = await startScheduler(embeddedBackend(), {
      BATON_API_AUTH: 'off',
      BATON_ADMIN_KEY: '',
    });
    try {
      const res = await request(`${open.url}/v1/tasks`);
      expect(res.statusCode).toBe(200);
      await res.body.dump();
      await eventually(
        async () => (/BATON_API_AUTH=off/.test(open.output()) ? true : undefined),
        10_000,
        'the warning of an open API',
      );
    } finally {
      await open.stop();
    }
  });
});
