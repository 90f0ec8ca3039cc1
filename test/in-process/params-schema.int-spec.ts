import { authHeaders } from '@baton/task-contract';
import { Api, SECRET } from '../support/baton';
import { InProcessBaton, startInProcess } from '../support/in-process';

jest.setTimeout(120_000);

interface Problem {
  pointer: string;
  message: string;
}

/** A type that a test worker declares with a strict schema (registered straight to the API). */
const TYPE = 'schema.check';
const SCHEMA = {
  type: 'object',
  properties: {
    cluster: { type: 'string', pattern: '^c[0-9]+$', description: 'the cluster to back up' },
    mode: { enum: ['full', 'incremental'], default: 'full' },
    keep_days: { type: 'integer', minimum: 1, maximum: 365 },
  },
  required: ['cluster'],
  additionalProperties: false,
};

/**
 * Task types that describe their inputs: a worker declares a JSON Schema of a type's params at
 * registration, and every way the scheduler makes or changes a task refuses params that break it,
 * naming each problem's JSON pointer, and stores nothing. Scheduler and template workers in one
 * process (their demo types declare schemas too).
 */
describe('params checked against the schema a task type declares', () => {
  let baton: InProcessBaton;
  let api: Api;

  /** A worker's registration, signed as workers sign theirs. */
  const register = (types: Record<string, unknown>[]) => {
    const body = {
      worker_id: 'schema-worker',
      url: 'http://127.0.0.1:9',
      version: '1.0.0',
      contract_version: '1.4.0',
      capacity: 1,
      task_types: types,
    };
    const signed = authHeaders(
      { mode: 'hmac', secret: SECRET },
      { method: 'POST', pathWithQuery: '/v1/workers', body: JSON.stringify(body) },
    );
    return api.call('POST', '/v1/workers', body, signed);
  };
  const declared = { task_type: TYPE, blocking: 'sync', implements: [] };
  const body = (params: unknown) => ({
    create_info: { task_type: TYPE, task_name: 'schema' },
    params,
    process_arg: { task_status: 'PAUSE' },
  });
  const count = async (): Promise<number> => {
    const page = await api.call<{ items: unknown[] }>(
      'GET',
      `/v1/tasks?task_type=${TYPE}&limit=500`,
    );
    return page.data.items.length;
  };
  /** The refusal's problems, after checking it is a 400 in the envelope. */
  const problems = (res: { status: number; code: number; data: unknown }): Problem[] => {
    expect(res.status).toBe(400);
    expect(res.code).toBe(40000);
    return (res.data as { errors: Problem[] }).errors;
  };

  beforeAll(async () => {
    baton = await startInProcess();
    api = baton.api;
    await baton.addWorker('w1');
    await baton.clock.until(
      async () => (await api.call<unknown[]>('GET', '/v1/workers')).data.length === 1,
      'the template worker registered',
    );
    const res = await register([
      { ...declared, params_schema: SCHEMA, result_schema: { type: 'object' } },
    ]);
    expect([res.status, res.message]).toEqual([200, 'ok']);
  });

  afterAll(async () => {
    await baton?.stop();
  });

  it('shows the declared schemas with the type, and those of the demo types', async () => {
    const type = await api.call<Record<string, unknown>>('GET', `/v1/task-types/${TYPE}`);
    expect(type.data.params_schema).toEqual(SCHEMA);
    expect(type.data.result_schema).toEqual({ type: 'object' });
    const sleep = await api.call<{ params_schema: { properties: Record<string, unknown> } }>(
      'GET',
      '/v1/task-types/demo.sleep',
    );
    expect(Object.keys(sleep.data.params_schema.properties).sort()).toEqual(['seconds', 'tick_ms']);
  });

  it('refuses a create naming every problem by its JSON pointer, and makes nothing', async () => {
    const before = await count();
    const res = await api.call('POST', '/v1/tasks', body({ mode: 'weekly', keep_days: 0, x: 1 }));
    expect(problems(res)).toEqual(
      expect.arrayContaining([
        { pointer: '/params/cluster', message: 'is required' },
        { pointer: '/params/mode', message: 'must be one of "full", "incremental"' },
        { pointer: '/params/keep_days', message: 'must be >= 1' },
        { pointer: '/params/x', message: 'is not a field of this type' },
      ]),
    );
    expect(res.message).toContain(`params do not match the schema of ${TYPE}`);
    expect(await count()).toBe(before);
    const good = await api.call('POST', '/v1/tasks', body({ cluster: 'c42', keep_days: 7 }));
    expect(good.status).toBe(201);
    // The demo types' schemas hold too: the worker's own limit, refused before any call to it.
    const sleep = await api.call('POST', '/v1/tasks', {
      create_info: { task_type: 'demo.sleep', task_name: 'too long' },
      params: { seconds: 7200 },
    });
    expect(problems(sleep)).toEqual([{ pointer: '/params/seconds', message: 'must be <= 3600' }]);
  });

  it('refuses a batch with a bad item whole, pointing into the batch', async () => {
    const before = await count();
    const res = await api.call('POST', '/v1/tasks/batch', {
      tasks: [body({ cluster: 'c1' }), body({ cluster: 'db-1' })],
    });
    expect(problems(res)).toEqual([
      { pointer: '/tasks/1/params/cluster', message: 'must match pattern "^c[0-9]+$"' },
    ]);
    expect(res.message).toMatch(/^tasks\[1\]: /);
    expect(await count()).toBe(before);
  });

  it('refuses new params for a task, and keeps the old ones', async () => {
    const id = await api.create(body({ cluster: 'c7' }));
    const res = await api.call('PUT', `/v1/tasks/${id}/params`, { params: { cluster: 7 } });
    expect(problems(res)).toEqual([{ pointer: '/params/cluster', message: 'must be string' }]);
    expect((await api.task(id)).params).toEqual({ cluster: 'c7' });
  });

  it("refuses a timer whose template's params break the schema", async () => {
    const timers = (await api.call<unknown[]>('GET', '/v1/timers')).data.length;
    const res = await api.call('POST', '/v1/timers', {
      name: 'nightly backup',
      schedule: { kind: 'interval', every_ms: 86_400_000 },
      task: { create_info: { task_type: TYPE, task_name: 'nightly' }, params: { keep_days: 3 } },
    });
    expect(problems(res)).toEqual([{ pointer: '/params/cluster', message: 'is required' }]);
    expect((await api.call<unknown[]>('GET', '/v1/timers')).data.length).toBe(timers);
  });

  it('checks the literal params of a log rule and a topology node; placeholders wait for the values', async () => {
    const rule = (params: Record<string, unknown>) => ({
      name: `backup on ${JSON.stringify(params)}`,
      sources: ['http:*'],
      match: { regex: 'backup (?<cluster>\\S+)' },
      template: { create_info: { task_type: TYPE, task_name: 'from a log' }, params },
    });
    const badRule = await api.call('POST', '/v1/log-rules', rule({ cluster: 'c1', keep_days: 0 }));
    expect(problems(badRule)).toEqual([{ pointer: '/params/keep_days', message: 'must be >= 1' }]);
    const filled = await api.call('POST', '/v1/log-rules', rule({ cluster: '{{cluster}}' }));
    expect(filled.status).toBe(201);

    const definition = (params: Record<string, unknown>) => ({
      name: 'backup-flow',
      nodes: [{ key: 'backup', task: { create_info: { task_type: TYPE }, params } }],
    });
    const badNode = await api.call('POST', '/v1/topologies/check', definition({ mode: 'x' }));
    expect(problems(badNode)).toEqual([
      {
        node: 'backup',
        pointer: '/nodes/0/task/params/cluster',
        message: 'node backup: /nodes/0/task/params/cluster is required',
      },
      {
        node: 'backup',
        pointer: '/nodes/0/task/params/mode',
        message: 'node backup: /nodes/0/task/params/mode must be one of "full", "incremental"',
      },
    ]);
    expect(badNode.message).toMatch(/^node backup: /);
    const fromInput = await api.call(
      'POST',
      '/v1/topologies/check',
      definition({ cluster: '{{input.cluster}}' }),
    );
    expect(fromInput.status).toBe(200);
  });

  it('refuses a schema that is not one, and a registration without it removes it', async () => {
    const broken = await register([{ ...declared, params_schema: { type: 'nothing' } }]);
    expect(broken.status).toBe(400);
    expect(broken.message).toContain(`${TYPE}: params_schema is not a JSON Schema`);
    const external = await register([
      { ...declared, params_schema: { $ref: 'https://example.com/schema.json' } },
    ]);
    expect(external.status).toBe(400);
    // Refused whole: a good type beside a bad one is not saved either.
    const half = await register([
      { ...declared, params_schema: { type: 'object' } },
      { task_type: 'schema.other', blocking: 'sync', implements: [], params_schema: { type: 1 } },
    ]);
    expect(half.status).toBe(400);
    expect((await api.call('GET', '/v1/task-types/schema.other')).status).toBe(404);
    // The type kept the schema of the last registration that was taken.
    expect((await api.call('GET', `/v1/task-types/${TYPE}`)).data.params_schema).toEqual(SCHEMA);

    expect((await register([declared])).status).toBe(200);
    expect((await api.call('GET', `/v1/task-types/${TYPE}`)).data.params_schema).toBeNull();
    const anything = await api.call('POST', '/v1/tasks', body({ anything: true }));
    expect(anything.status).toBe(201);
    // Back as it was, for whoever runs after.
    expect((await register([{ ...declared, params_schema: SCHEMA }])).status).toBe(200);
  });
});
