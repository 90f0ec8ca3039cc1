import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import Fastify, { FastifyInstance } from 'fastify';
import { rawGet } from '../../../test/support/raw-http';
import { registerApiProxy, schedulerPath } from './api-proxy';

/** The ways out of `/api/v1/` the hostile-input probe found, and their kin. */
const WAYS_OUT = [
  '/api/v1/../../metrics',
  '/api/v1/%2e%2e/%2e%2e/metrics',
  '/api/v1/%2E%2E/%2E%2E/metrics',
  '/api/v1/.%2e/.%2e/metrics',
  '/api/v1/tasks/../../../metrics',
  '/api/v1/tasks%23/../../metrics',
  '/api/v1/tasks\\..\\..\\metrics',
  '/api/v1/tasks%5c..%5c..%5cmetrics',
  '/api/v1/tasks%2f..%2f..%2fmetrics',
  '/api/v1/../../docs',
  '/api/v1/../../docs-json',
  '/api/v1/../../health/ready',
  '/api/v1/./tasks',
  '/api/v1/tasks#/../../metrics',
];

describe('schedulerPath', () => {
  it('passes /api/v1/... on as /v1/..., bytes and query unchanged', () => {
    expect(schedulerPath('/api/v1/tasks?status=RUNNING&q=a%20b')).toEqual({
      path: '/v1/tasks?status=RUNNING&q=a%20b',
    });
    expect(schedulerPath('/api/v1/tasks/01JABC%20x')).toEqual({ path: '/v1/tasks/01JABC%20x' });
    // Dots inside a segment are not a dot segment.
    expect(schedulerPath('/api/v1/task-types/demo.sleep')).toEqual({
      path: '/v1/task-types/demo.sleep',
    });
  });

  it('refuses every path a URL parser could read as another', () => {
    for (const url of WAYS_OUT)
      expect([url, schedulerPath(url)]).toEqual([url, { refused: 'ambiguous' }]);
    expect(schedulerPath('/api/v1/tasks/%E0%A4%A')).toEqual({ refused: 'ambiguous' });
  });

  it('answers not-api for anything else', () => {
    expect(schedulerPath('/api/metrics')).toEqual({ refused: 'not-api' });
    expect(schedulerPath('/api/v2/tasks')).toEqual({ refused: 'not-api' });
  });
});

/** The proxy in a real Fastify server, in front of an upstream that records what reaches it. */
describe('the console proxy, over HTTP', () => {
  let upstream: Server;
  let console: FastifyInstance;
  const reached: string[] = [];
  let port = 0;

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      reached.push(req.url ?? '');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ code: 0, message: 'ok', data: req.url }));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const up = (upstream.address() as AddressInfo).port;
    console = Fastify();
    registerApiProxy(console, `http://127.0.0.1:${up}`, 5000);
    await console.listen({ port: 0, host: '127.0.0.1' });
    port = (console.server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await console?.close();
    await new Promise((r) => upstream?.close(r));
  });

  it('sends nothing upstream for a way out of /api/v1/: 400 in the envelope', async () => {
    reached.length = 0;
    for (const path of WAYS_OUT.filter((p) => !p.includes('#'))) {
      const res = await rawGet(`http://127.0.0.1:${port}`, path);
      expect([path, res.status, JSON.parse(res.body)]).toEqual([
        path,
        400,
        { code: 40003, message: expect.stringMatching(/plain \/api\/v1/), data: null },
      ]);
    }
    expect(reached).toEqual([]);
  });

  it('passes a plain path on unchanged', async () => {
    reached.length = 0;
    const res = await rawGet(`http://127.0.0.1:${port}`, '/api/v1/tasks/01J%20x?limit=5');
    expect(res.status).toBe(200);
    expect(reached).toEqual(['/v1/tasks/01J%20x?limit=5']);
  });
});
