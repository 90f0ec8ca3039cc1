import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { request } from 'undici';
import { ContractFastPath, authHeaders } from '@baton/task-contract';
import { createWorkerApp } from './bootstrap';
import { loadWorkerConfig } from './config/worker.config';

const SECRET = 'fast-path-secret-0123456789';
const TYPE_PATTERN_OK = 'demo.echo';

interface Call {
  name: string;
  method: 'POST' | 'PUT';
  /** Path and query after the base URL. */
  path: string;
  /** Sent as is (a string), or JSON-encoded. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Leave the HMAC headers out, or sign another body than the one sent. */
  sign?: 'none' | 'wrong';
  fence?: string | null;
  /** Whether the fast path takes it (else it goes to Fastify and Nest on both sides). */
  fast: boolean;
}

interface Answer {
  status: number;
  contentType: string | undefined;
  body: unknown;
}

/** What differs between two honest answers: clock readings and error ids. */
function normalise(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value)
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>')
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>'),
  );
}

async function send(base: string, call: Call): Promise<Answer> {
  const payload = typeof call.body === 'string' ? call.body : JSON.stringify(call.body);
  const fence = call.fence === undefined ? '1' : call.fence;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...(fence === null ? {} : { 'x-baton-fence': fence }),
    ...call.headers,
  };
  if (call.sign !== 'none') {
    Object.assign(
      headers,
      authHeaders(
        { mode: 'hmac', secret: SECRET },
        {
          method: call.method,
          pathWithQuery: call.path,
          fence: fence ?? '',
          body: call.sign === 'wrong' ? `${payload} ` : payload,
        },
      ),
    );
  }
  const res = await request(`${base}${call.path}`, { method: call.method, headers, body: payload });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    contentType: res.headers['content-type'] as string | undefined,
    body: normalise(JSON.parse(text)),
  };
}

const create = (id: string, type = TYPE_PATTERN_OK, extra: Record<string, unknown> = {}) => ({
  task_id: id,
  attempt: 1,
  create_info: { task_type: type, task_name: `fast path ${id}` },
  params: { message: 'hi' },
  ...extra,
});

/**
 * The fast path answers exactly as the framework path does: two template workers, one with
 * WORKER_FAST_PATH on and one off, get the same calls (valid, refused at each check in turn, and
 * ones the fast path must leave to the app) and must give the same status, content type and body.
 */
describe('ContractFastPath', () => {
  let dir: string;
  const apps: NestFastifyApplication[] = [];
  let fast: string;
  let slow: string;
  const fastPath = new ContractFastPath();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-fast-path-'));
    const env = {
      WORKER_PORT: '0',
      BATON_AUTH_MODE: 'hmac',
      BATON_AUTH_SECRET: SECRET,
      WORKER_ROLLBACK_DIR: join(dir, 'rollback'),
      WORKER_BODY_LIMIT: '4096',
    };
    const on = await createWorkerApp(loadWorkerConfig({ ...env }), false, fastPath);
    const off = await createWorkerApp(loadWorkerConfig({ ...env, WORKER_FAST_PATH: 'off' }), false);
    for (const app of [on, off]) {
      await app.listen(0, '127.0.0.1');
      apps.push(app);
    }
    fast = await on.getUrl();
    slow = await off.getUrl();
  });

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  const calls: Call[] = [
    { name: 'create', method: 'POST', path: '/v1/task/demo.echo', body: create('c1'), fast: true },
    {
      name: 'create again (idempotent)',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('c1'),
      fast: true,
    },
    {
      name: 'create_run of a sync type',
      method: 'POST',
      path: '/v1/task/demo.echo?action=running',
      body: create('r1'),
      fast: true,
    },
    {
      name: 'create_run repeated',
      method: 'POST',
      path: '/v1/task/demo.echo?action=running',
      body: create('r1'),
      fast: true,
    },
    {
      name: 'create with every field',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('c2', 'demo.echo', {
        lock_keys: ['db:1'],
        process_arg: { deadline_second: 60, max_retry: 1, task_status: 'Postpose' },
      }),
      fast: true,
    },
    {
      name: 'create of an async type',
      method: 'POST',
      path: '/v1/task/demo.sleep',
      body: create('s1', 'demo.sleep', { params: { ms: 50 } }),
      fast: true,
    },
    {
      name: 'running it',
      method: 'PUT',
      path: '/v1/task/demo.sleep?task_id=s1&action=running',
      body: {},
      fast: true,
    },
    {
      name: 'running it again (illegal transition)',
      method: 'PUT',
      path: '/v1/task/demo.sleep?task_id=s1&action=running',
      body: {},
      fast: true,
    },
    {
      name: 'running with a reason and the type repeated',
      method: 'PUT',
      path: '/v1/task/demo.echo?task_id=c1&task_type=demo.echo&action=running',
      body: { reason: 'go' },
      fast: true,
    },
    {
      name: 'running an unknown task',
      method: 'PUT',
      path: '/v1/task/demo.echo?task_id=nope&action=running',
      body: {},
      fast: true,
    },
    {
      name: 'running with a bad task_id',
      method: 'PUT',
      path: '/v1/task/demo.echo?task_id=a.b&action=running',
      body: {},
      fast: true,
    },
    {
      name: 'running with another task_type',
      method: 'PUT',
      path: '/v1/task/demo.echo?task_id=c1&task_type=demo.sleep&action=running',
      body: {},
      fast: true,
    },
    {
      name: 'running with an unknown body field',
      method: 'PUT',
      path: '/v1/task/demo.echo?task_id=c2&action=running',
      body: { why: 1 },
      fast: true,
    },
    {
      name: 'create_run of an async type',
      method: 'POST',
      path: '/v1/task/demo.sleep?action=running',
      body: create('s2', 'demo.sleep'),
      fast: true,
    },
    {
      name: 'not JSON',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: '{"task_id": ',
      fast: true,
    },
    {
      name: 'prototype poisoning',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: '{"__proto__": {"x": 1}}',
      fast: true,
    },
    { name: 'an array', method: 'POST', path: '/v1/task/demo.echo', body: [1], fast: true },
    {
      name: 'no signature',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('a1'),
      sign: 'none',
      fast: true,
    },
    {
      name: 'a wrong signature',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('a2'),
      sign: 'wrong',
      fast: true,
    },
    {
      name: 'no fence',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('f1'),
      fence: null,
      fast: true,
    },
    {
      name: 'a lower fence',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('c1'),
      fence: '0',
      fast: true,
    },
    {
      name: 'a malformed fence',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('f2'),
      fence: 'x',
      fast: true,
    },
    {
      name: 'invalid fields',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('bad id', 'demo.echo', { attempt: 0, lock_keys: 'k' }),
      fast: true,
    },
    {
      name: 'null optionals',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('n1', 'demo.echo', { attempt: null, params: null }),
      fast: true,
    },
    {
      name: 'params with keys class-transformer drops',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('k1', 'demo.echo', { params: { valueOf: 1, deep: { prototype: 2 } } }),
      fast: true,
    },
    {
      name: 'params with a constructor key',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('k2', 'demo.echo', { params: { constructor: 'x' } }),
      fast: true,
    },
    {
      name: 'type not the path',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('m1', 'demo.sleep'),
      fast: true,
    },
    {
      name: 'unknown type',
      method: 'POST',
      path: '/v1/task/demo.unknown',
      body: create('u1', 'demo.unknown'),
      fast: true,
    },
    {
      name: 'another action',
      method: 'POST',
      path: '/v1/task/demo.echo?action=pause',
      body: create('x1'),
      fast: false,
    },
    {
      name: 'an escaped path',
      method: 'POST',
      path: '/v1/task/demo%2Eecho',
      body: create('x2'),
      fast: false,
    },
    {
      name: 'another content type',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('x3'),
      headers: { 'content-type': 'text/plain' },
      fast: false,
    },
    {
      name: 'a body over the limit',
      method: 'POST',
      path: '/v1/task/demo.echo',
      body: create('x4', 'demo.echo', { params: { pad: 'x'.repeat(5000) } }),
      fast: false,
    },
    {
      name: 'pause (not a hot call)',
      method: 'PUT',
      path: '/v1/task/demo.echo?task_id=c2&action=pause',
      body: {},
      fast: false,
    },
    {
      name: 'a query with escapes',
      method: 'PUT',
      path: '/v1/task/demo.echo?task_id=c%32&action=running',
      body: {},
      fast: false,
    },
  ];

  it('answers every call as the framework does, and serves the hot ones itself', async () => {
    for (const call of calls) {
      const before = fastPath.served;
      const a = await send(fast, call);
      const b = await send(slow, call);
      expect({ call: call.name, ...a }).toEqual({ call: call.name, ...b });
      expect({ call: call.name, servedHere: fastPath.served - before }).toEqual({
        call: call.name,
        servedHere: call.fast ? 1 : 0,
      });
    }
    // The valid hot calls succeeded (the comparison above would pass on two identical failures).
    const echo = await send(fast, { ...calls[2], body: create('r2') });
    expect(echo).toMatchObject({
      status: 200,
      body: { code: 0, data: { task_status: 'SUCCESS' } },
    });
  });
});
