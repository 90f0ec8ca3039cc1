import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { authHeaders } from '@baton/task-contract';
import { AUTH, SECRET } from '../support/baton';
import { InProcessBaton, startInProcess } from '../support/in-process';
import { ROOT } from '../support/processes';

jest.setTimeout(120_000);

interface Raw {
  status: number;
  contentType: string;
  body: { code: number; message: string; data: unknown };
}

/** Sends bytes as they are (no JSON encoding on the way) and reads the answer as the envelope. */
async function send(
  url: string,
  method: string,
  body?: string | Buffer,
  headers: Record<string, string> = {},
): Promise<Raw> {
  const res = await request(url, {
    method: method as 'POST',
    headers: {
      ...AUTH,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body,
  });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    contentType: String(res.headers['content-type'] ?? ''),
    body: JSON.parse(text) as Raw['body'],
  };
}

interface Schema {
  $ref?: string;
  allOf?: Schema[];
  type?: string;
  items?: Schema;
  nullable?: boolean;
  properties?: Record<string, Schema>;
}
interface Operation {
  requestBody?: { content: Record<string, { schema: Schema }> };
  security?: Record<string, unknown>[];
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

const readDocument = (name: string): Document =>
  JSON.parse(readFileSync(join(ROOT, 'openapi', name), 'utf8')) as Document;

/** Every operation of an OpenAPI document that takes a body, with its path parameters filled. */
function bodyRoutes(
  document: string,
): { method: string; path: string; schema: Schema; byWorkers: boolean }[] {
  const doc = readDocument(document);
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([, op]) => op.requestBody !== undefined)
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        path: path.replace('{task_type}', 'demo.echo').replace(/\{[a-z_]+\}/g, 'x'),
        schema: op.requestBody!.content['application/json'].schema,
        // Signed like the worker contract: the calls workers make.
        byWorkers: (op.security ?? []).some((s) => 'hmac' in s),
      })),
  );
}

/** A schema with its `$ref` (or single `allOf`) followed; `nullable` kept from the reference site. */
function resolve(doc: Document, schema: Schema): Schema {
  const target = schema.$ref ?? (schema.allOf?.length === 1 ? schema.allOf[0].$ref : undefined);
  if (!target) return schema;
  const named = doc.components.schemas[target.replace('#/components/schemas/', '')];
  return { ...resolve(doc, named), nullable: schema.nullable ?? named.nullable };
}

interface NullProbe {
  body: unknown;
  field: string;
  nullable: boolean;
}

/**
 * A body for each field of `schema` set to null, and one level into the fields the document
 * gives a schema of their own (DTOs, or lists of them); inline objects, such as ingested log
 * records, are free-form there and checked record by record.
 */
function nullProbes(doc: Document, schema: Schema): NullProbe[] {
  const probes: NullProbe[] = [];
  const named = (x?: Schema): boolean => x?.$ref !== undefined || x?.allOf !== undefined;
  for (const [name, raw] of Object.entries(resolve(doc, schema).properties ?? {})) {
    const prop = resolve(doc, raw);
    probes.push({ body: { [name]: null }, field: name, nullable: prop.nullable === true });
    const list = prop.type === 'array' && named(prop.items) ? resolve(doc, prop.items!) : undefined;
    const nested = list ?? (named(raw) ? prop : undefined);
    for (const [inner, innerRaw] of Object.entries(nested?.properties ?? {})) {
      const nullable = resolve(doc, innerRaw).nullable === true;
      probes.push(
        list
          ? { body: { [name]: [{ [inner]: null }] }, field: `${name}.0.${inner}`, nullable }
          : { body: { [name]: { [inner]: null } }, field: `${name}.${inner}`, nullable },
      );
    }
  }
  return probes;
}

/**
 * What a null probe must be answered: a field documented nullable takes null (no 5xx, no
 * complaint about it); any other is refused with 400 (`40000`) naming it. True when refused.
 */
function expectNullAnswer(where: string, probe: NullProbe, res: Raw): boolean {
  const complaint = `${probe.field} must not be null`;
  if (probe.nullable) {
    expect(res.status).toBeLessThan(500);
    expect(res.body.message).not.toContain(complaint);
    return false;
  }
  expect({ where, field: probe.field, status: res.status, code: res.body.code }).toEqual({
    where,
    field: probe.field,
    status: 400,
    code: 40000,
  });
  expect(res.body.message).toContain(complaint);
  return true;
}

const DEEP_OBJECTS = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
const DEEP_ARRAYS = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;

/**
 * Bodies and URLs a probe sent to every route, each once answered 500 or outside the envelope,
 * now refused with a 4xx in the envelope, on the scheduler and on the template worker (both its
 * fast path and its Nest routes). In one process (embedded defaults, a ManualClock): what is
 * refused, and how, is the HTTP servers' and the validators' doing, over real loopback HTTP.
 */
describe('hostile input', () => {
  let baton: InProcessBaton;
  let scheduler: { url: string };
  let worker: { url: string };

  beforeAll(async () => {
    baton = await startInProcess();
    scheduler = { url: baton.api.base };
    worker = { url: await baton.addWorker('hostile-w1') };
  });

  afterAll(async () => {
    await baton?.stop();
  });

  const routes = (): { base: string; method: string; path: string }[] => [
    ...bodyRoutes('scheduler.v1.json').map((r) => ({ base: scheduler.url, ...r })),
    ...bodyRoutes('worker.v1.json').flatMap((r) =>
      // The worker's hot calls go through its fast path, the others through Nest.
      ['create', 'running', 'pause'].map((action) => ({
        base: worker.url,
        method: r.method,
        path: `${r.path}?action=${action}`,
      })),
    ),
  ];

  it('refuses a body nested 10,000 objects or 100,000 arrays deep on every body route: 400, not 500', async () => {
    const all = routes();
    expect(all.length).toBeGreaterThanOrEqual(16);
    for (const { base, method, path } of all) {
      for (const body of [DEEP_OBJECTS, DEEP_ARRAYS]) {
        const res = await send(`${base}${path}`, method, body);
        expect({ route: `${method} ${path}`, status: res.status, code: res.body.code }).toEqual({
          route: `${method} ${path}`,
          status: 400,
          code: 40001,
        });
        expect(res.body.message).toMatch(/deeper than 64 levels/);
      }
    }
  });

  it('refuses a 50,000-member body on its bytes, and answers /health meanwhile', async () => {
    const params = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, i]));
    const body = JSON.stringify({ create_info: { task_type: 'demo.echo' }, params });
    // In one process the client and the server share an event loop, so how long each took says
    // nothing; that /health/live was answered beside the refusal does.
    const [res, health] = await Promise.all([
      send(`${scheduler.url}/v1/tasks`, 'POST', body),
      send(`${scheduler.url}/health/live`, 'GET'),
    ]);
    expect(health.status).toBe(200);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe(40001);
    expect(res.body.message).toMatch(/more than 20000 members and items/);
  });

  it('refuses a lone surrogate and bytes that are not UTF-8; stores a surrogate pair as answered', async () => {
    const lone = await send(
      `${scheduler.url}/v1/tasks`,
      'POST',
      '{"create_info":{"task_type":"demo.echo","task_name":"x\\ud800y"}}',
    );
    expect([lone.status, lone.body.code]).toEqual([400, 40001]);
    expect(lone.body.message).toMatch(/lone surrogate/);

    const bytes = Buffer.concat([
      Buffer.from('{"create_info":{"task_type":"demo.echo","task_name":"'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}}'),
    ]);
    const notUtf8 = await send(`${scheduler.url}/v1/tasks`, 'POST', bytes);
    expect([notUtf8.status, notUtf8.body.code]).toEqual([400, 40001]);
    expect(notUtf8.body.message).toMatch(/not valid UTF-8/);

    const workerLone = await send(
      `${worker.url}/v1/task/demo.echo?action=create`,
      'POST',
      '{"task_id":"t\\udc00","task_type":"demo.echo"}',
    );
    expect([workerLone.status, workerLone.body.code]).toEqual([400, 40001]);

    const pair = await send(
      `${scheduler.url}/v1/tasks`,
      'POST',
      '{"create_info":{"task_type":"demo.echo","task_name":"ok \\ud83d\\ude00"}}',
    );
    expect(pair.status).toBe(201);
    const created = pair.body.data as { task_id: string; task_name: string };
    expect(created.task_name).toBe('ok 😀');
    const read = await send(`${scheduler.url}/v1/tasks/${created.task_id}`, 'GET');
    expect((read.body.data as { task_name: string }).task_name).toBe('ok 😀');
  });

  it('refuses null where the API documents no null, on every public body route and one level into its objects', async () => {
    const doc = readDocument('scheduler.v1.json');
    let refused = 0;
    let allowed = 0;
    for (const { method, path, schema, byWorkers } of bodyRoutes('scheduler.v1.json')) {
      if (byWorkers) continue;
      const url = `${scheduler.url}${path}`;
      const route = `${method} ${path}`;
      // The body itself: an object, never null, a list or a scalar.
      for (const body of ['null', '[]', '1', '"x"']) {
        const res = await send(url, method, body);
        expect({ route, body, status: res.status }).toEqual({ route, body, status: 400 });
      }
      for (const probe of nullProbes(doc, schema)) {
        const res = await send(url, method, JSON.stringify(probe.body));
        if (expectNullAnswer(route, probe, res)) refused++;
        else allowed++;
      }
    }
    console.log(`null refused on ${refused} fields, taken where documented on ${allowed}`);
    expect(refused).toBeGreaterThan(40);
  });

  it('the worker refuses null where its contract documents no null, on each call with a body and one level in', async () => {
    const doc = readDocument('worker.v1.json');
    const named = (ref: string): Schema => resolve(doc, { $ref: `#/components/schemas/${ref}` });
    // Each body schema and a call that takes it (the PUT's action picks the schema).
    const calls: { method: string; query: string; schema: Schema }[] = [
      { method: 'POST', query: '', schema: named('CreateTaskRequestDto') },
      { method: 'PUT', query: '?task_id=T1', schema: named('NotifyRequestDto') },
      { method: 'PUT', query: '?task_id=T1&action=change', schema: named('ChangeRequestDto') },
      { method: 'PUT', query: '?task_id=T1&action=pause', schema: named('ActionRequestDto') },
    ];
    let refused = 0;
    for (const { method, query, schema } of calls) {
      for (const probe of nullProbes(doc, schema)) {
        const pathWithQuery = `/v1/task/demo.echo${query}`;
        const body = JSON.stringify(probe.body);
        const headers = {
          ...authHeaders(
            { mode: 'hmac', secret: SECRET },
            { method, pathWithQuery, fence: '1', body },
          ),
          'x-baton-fence': '1',
        };
        const res = await send(`${worker.url}${pathWithQuery}`, method, body, headers);
        if (expectNullAnswer(`${method} ${query}`, probe, res)) refused++;
      }
    }
    console.log(`worker: null refused on ${refused} fields`);
    expect(refused).toBeGreaterThanOrEqual(16);
  });

  it('a timer PATCH with start_at or end_at null removes the bound; {"name": null} changes nothing', async () => {
    const created = await send(
      `${scheduler.url}/v1/timers`,
      'POST',
      JSON.stringify({
        name: 'bounded',
        schedule: { kind: 'cron', cron: '0 0 3 * * *' },
        task: { create_info: { task_type: 'demo.echo', task_name: 'nightly' } },
        start_at: '2030-01-01T00:00:00.000Z',
        end_at: '2031-01-01T00:00:00.000Z',
      }),
    );
    expect([created.status, created.body.message]).toEqual([201, 'ok']);
    const timer = created.body.data as { timer_id: string; version: number };
    const url = `${scheduler.url}/v1/timers/${timer.timer_id}`;
    const named = await send(url, 'PATCH', '{"name":null}');
    expect([named.status, named.body.code]).toEqual([400, 40000]);
    const unchanged = (await send(url, 'GET')).body.data as { version: number; name: string };
    expect(unchanged).toMatchObject({ version: timer.version, name: 'bounded' });

    const open = await send(url, 'PATCH', '{"start_at":null}');
    expect(open.status).toBe(200);
    expect(open.body.data).toMatchObject({ start_at: null, end_at: '2031-01-01T00:00:00.000Z' });
    const endless = await send(url, 'PATCH', '{"end_at":null}');
    expect(endless.status).toBe(200);
    expect(endless.body.data).toMatchObject({ start_at: null, end_at: null });
    expect((endless.body.data as { next_fire_at: string | null }).next_fire_at).not.toBeNull();
  });

  it('runs a catastrophic log-rule pattern against a 60,000-character line without stalling; refuses lookarounds', async () => {
    const rule = await send(
      `${scheduler.url}/v1/log-rules`,
      'POST',
      JSON.stringify({
        name: 'catastrophic',
        sources: ['http:hostile'],
        match: { regex: '(?<run>(a+)+)$' },
        template: { create_info: { task_type: 'demo.echo', task_name: 'run {{run}}' } },
      }),
    );
    expect([rule.status, rule.body.message]).toEqual([201, 'ok']);
    const lookaround = await send(
      `${scheduler.url}/v1/log-rules`,
      'POST',
      JSON.stringify({
        name: 'lookaround',
        sources: ['http:hostile'],
        match: { regex: '(?<=a)b' },
        template: { create_info: { task_type: 'demo.echo', task_name: 'x' } },
      }),
    );
    expect([lookaround.status, lookaround.body.code]).toEqual([400, 40000]);
    expect(lookaround.body.message).toMatch(/lookarounds/);

    const records = [
      { position: 1, line: `${'a'.repeat(60_000)}!` },
      { position: 2, line: 'aaaa' },
    ];
    const [ingest, health] = await Promise.all([
      send(`${scheduler.url}/v1/logs`, 'POST', JSON.stringify({ source: 'hostile', records })),
      (async () => {
        // The ingest goes first.
        await new Promise((r) => setImmediate(r));
        return send(`${scheduler.url}/health/live`, 'GET');
      })(),
    ]);
    expect(health.status).toBe(200);
    expect(ingest.status).toBe(200);
    // The long line does not end in a's: no match; the short one does.
    expect(ingest.body.data).toMatchObject({ accepted: 2, unmatched: 1, matched: 1, created: 1 });
  });

  it('calls nowhere internal: callback_url, log-rule templates and worker registrations are checked', async () => {
    const internal = [
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/',
      'http://metadata.google.internal/',
      'http://127.0.0.1:3306/',
      'http://127.0.0.1:6379/',
      'http://[::1]/',
      'http://0x7f000001/',
      'http://0.0.0.0/',
      'http://10.0.0.1/',
      'http://192.168.0.1/',
      'http://user:pass@hooks.example.com/',
      // A cloud metadata short name, a doubled dot, a label ASCII punycode reads as localhost.
      'http://metadata/',
      'http://127.0.0.1../',
      'http://xn--localhost-/',
      'http://xn--localhost-.example.com/',
    ];
    const task = (callback_url: string): string =>
      JSON.stringify({ create_info: { task_type: 'demo.echo', task_name: 'x' }, callback_url });
    for (const url of internal) {
      const res = await send(`${scheduler.url}/v1/tasks`, 'POST', task(url));
      expect({ url, status: res.status, code: res.body.code }).toEqual({
        url,
        status: 400,
        code: 40000,
      });
      expect(res.body.message).toMatch(/^callback_url /);
    }
    const fine = await send(
      `${scheduler.url}/v1/tasks`,
      'POST',
      task('https://hooks.example.com/x'),
    );
    expect(fine.status).toBe(201);
    const timer = await send(
      `${scheduler.url}/v1/timers`,
      'POST',
      JSON.stringify({
        name: 'ssrf',
        schedule: { kind: 'cron', cron: '0 0 3 * * *' },
        task: {
          create_info: { task_type: 'demo.echo', task_name: 'x' },
          callback_url: 'http://169.254.169.254/',
        },
      }),
    );
    expect([timer.status, timer.body.code]).toEqual([400, 40000]);

    // Log-rule templates: an unregistered worker address or task type is refused when written.
    const rule = (create_info: Record<string, string>): string =>
      JSON.stringify({
        name: 'ssrf',
        sources: ['http:ssrf'],
        match: { regex: 'ERROR' },
        template: { create_info: { task_name: 'x', ...create_info } },
      });
    const infos: Record<string, string>[] = [
      { task_type: 'demo.echo', http_url: 'http://169.254.169.254/' },
      { task_type: 'demo.echo', http_url: 'http://127.0.0.1:6379/' },
      { task_type: 'no.such.type' },
    ];
    for (const info of infos) {
      const res = await send(`${scheduler.url}/v1/log-rules`, 'POST', rule(info));
      expect({ info, status: res.status }).toEqual({ info, status: 400 });
      expect(res.body.message).toMatch(/^template: /);
    }

    // A signed registration naming a metadata address is refused; the real worker (loopback,
    // allowed by default) registered.
    const body = JSON.stringify({
      worker_id: 'ssrf-w',
      url: 'http://169.254.169.254/',
      version: '1',
      capacity: 1,
      task_types: [{ task_type: 'demo.echo', blocking: 'sync', implements: [] }],
    });
    const signed = authHeaders(
      { mode: 'hmac', secret: SECRET },
      { method: 'POST', pathWithQuery: '/v1/workers', body },
    );
    const registered = await send(`${scheduler.url}/v1/workers`, 'POST', body, signed);
    expect([registered.status, registered.body.code]).toEqual([400, 40000]);
    expect(registered.body.message).toMatch(/link-local/);
    const workers = (await send(`${scheduler.url}/v1/workers`, 'GET')).body.data as {
      worker_id: string;
    }[];
    expect(workers.map((w) => w.worker_id)).toEqual(['hostile-w1']);
  });

  it('refuses near misses the probe saw accepted: status spellings, hex limits, nested lists, a string for a list, unknown create queries', async () => {
    const create = (task_status: string): Promise<Raw> =>
      send(
        `${scheduler.url}/v1/tasks`,
        'POST',
        JSON.stringify({
          create_info: { task_type: 'demo.echo', task_name: 'x' },
          process_arg: { task_status },
        }),
      );
    for (const spelling of ['init', 'INIT ', 'pause', ' PAUSE']) {
      const res = await create(spelling);
      expect({ spelling, status: res.status }).toEqual({ spelling, status: 400 });
    }
    const alias = await create('Postpose');
    expect(alias.status).toBe(201);
    expect((alias.body.data as { task_status: string }).task_status).toBe('POSTPONE');

    expect((await send(`${scheduler.url}/v1/tasks?limit=0x10`, 'GET')).status).toBe(400);
    expect((await send(`${scheduler.url}/v1/tasks?limit=1e1`, 'GET')).status).toBe(400);
    expect((await send(`${scheduler.url}/v1/tasks?limit=16`, 'GET')).status).toBe(200);

    const registration = JSON.stringify({
      worker_id: 'nested-w',
      url: 'http://127.0.0.1:9/',
      version: '1',
      capacity: 1,
      task_types: [[]],
    });
    const registered = await send(
      `${scheduler.url}/v1/workers`,
      'POST',
      registration,
      authHeaders(
        { mode: 'hmac', secret: SECRET },
        { method: 'POST', pathWithQuery: '/v1/workers', body: registration },
      ),
    );
    expect([registered.status, registered.body.message]).toEqual([
      400,
      expect.stringMatching(/task_types must be an object/),
    ]);

    // The worker: a string where the contract says a list, and a query create does not take.
    const toWorker = (pathWithQuery: string, body: string): Promise<Raw> =>
      send(`${worker.url}${pathWithQuery}`, 'POST', body, {
        'x-baton-fence': '1',
        ...authHeaders(
          { mode: 'hmac', secret: SECRET },
          { method: 'POST', pathWithQuery, fence: '1', body },
        ),
      });
    const stringKeys = await toWorker(
      '/v1/task/demo.echo',
      JSON.stringify({
        task_id: 'near-miss-1',
        attempt: 1,
        create_info: { task_type: 'demo.echo', task_name: 'x' },
        lock_keys: 'x',
      }),
    );
    expect([stringKeys.status, stringKeys.body.message]).toEqual([
      400,
      expect.stringMatching(/lock_keys must be an array/),
    ]);
    const unknownQuery = await toWorker(
      '/v1/task/demo.echo?foo=1',
      JSON.stringify({
        task_id: 'near-miss-2',
        attempt: 1,
        create_info: { task_type: 'demo.echo', task_name: 'x' },
      }),
    );
    expect([unknownQuery.status, unknownQuery.body.message]).toEqual([
      400,
      expect.stringMatching(/foo should not exist/),
    ]);
    const fine = await toWorker(
      '/v1/task/demo.echo',
      JSON.stringify({
        task_id: 'near-miss-3',
        attempt: 1,
        create_info: { task_type: 'demo.echo', task_name: 'x' },
      }),
    );
    expect([fine.status, fine.body.message]).toEqual([200, 'ok']);
  });

  it('answers URL errors in the envelope: bad percent-encoding or UTF-8 (400), a 5,000-character id (414)', async () => {
    for (const base of [scheduler.url, worker.url]) {
      const prefix = base === worker.url ? '/v1/task' : '/v1/tasks';
      for (const bad of ['%zz', '%c3%28']) {
        const res = await send(`${base}${prefix}/${bad}`, 'GET');
        expect({ base, bad, status: res.status, code: res.body.code }).toEqual({
          base,
          bad,
          status: 400,
          code: 40003,
        });
        expect(res.contentType).toMatch(/application\/json/);
      }
      const long = await send(`${base}${prefix}/${'a'.repeat(5000)}`, 'GET');
      expect([long.status, long.body.code]).toEqual([414, 41400]);
      expect(long.body.message).toMatch(/longer than the limit/);
    }
  });

  it("answers what Node's HTTP parser refuses in the envelope too: headers past the limit (431), a malformed request (400)", async () => {
    const requests: [string, number, number][] = [
      [`GET /v1/tasks HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 43100],
      ['GET /v1/tasks HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n', 400, 40004],
      ['BREW /v1/tasks HTCPCP/1.0\r\n\r\n', 400, 40004],
      [
        'GET /v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
        400,
        40004,
      ],
    ];
    for (const base of [scheduler.url, worker.url]) {
      const { port } = new URL(base);
      for (const [bytes, status, code] of requests) {
        const answer = await rawExchange(Number(port), bytes);
        const [head, body] = answer.split('\r\n\r\n');
        expect({ base, request: bytes.slice(0, 30), line: head.split('\r\n')[0] }).toEqual({
          base,
          request: bytes.slice(0, 30),
          line: expect.stringMatching(new RegExp(`^HTTP/1.1 ${status} `)),
        });
        expect(head).toMatch(/content-type: application\/json/i);
        expect(JSON.parse(body)).toEqual({ code, message: expect.any(String), data: null });
      }
    }
  });
});

/** Writes bytes on a fresh connection and reads all the server answers until it closes. */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(bytes));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (answer += c));
    socket.on('close', () => resolve(answer));
    socket.on('error', (err) => (answer ? resolve(answer) : reject(err)));
  });
}
