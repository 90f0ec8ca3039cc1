import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { attemptSpanId, attemptTraceId } from '@baton/task-contract';
import {
  Api,
  Backend,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually } from './support/processes';

jest.setTimeout(180_000);

/** A span as an OTLP/HTTP JSON export carries it, with its service's name. */
interface ExportedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status?: { code?: number };
}

/** OTLP span kinds (the protocol's numbers). */
const SERVER = 2;
const CLIENT = 3;

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean };
const valueOf = (v: AnyValue): unknown => v.stringValue ?? v.intValue ?? v.boolValue;
const attrs = (list: { key: string; value: AnyValue }[] = []): Record<string, unknown> =>
  Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

/** An OTLP/HTTP trace receiver (JSON): what a collector would be told, kept in memory. */
async function otlpReceiver(): Promise<{ url: string; spans: ExportedSpan[]; server: Server }> {
  const spans: ExportedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && req.headers['content-type']?.includes('json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: {
            resource: { attributes: { key: string; value: AnyValue }[] };
            scopeSpans: {
              spans: (Omit<ExportedSpan, 'service' | 'attributes'> & {
                attributes: { key: string; value: AnyValue }[];
              })[];
            }[];
          }[];
        };
        for (const rs of body.resourceSpans) {
          const service = String(attrs(rs.resource.attributes)['service.name']);
          for (const ss of rs.scopeSpans)
            for (const s of ss.spans)
              spans.push({ ...s, service, attributes: attrs(s.attributes) });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    server,
  };
}

/**
 * With OTEL_EXPORTER_OTLP_ENDPOINT set, scheduler and worker export spans to it: one trace per
 * task attempt, whose root the scheduler writes when the attempt ends, its calls to the worker
 * as client spans under that root, and the worker's answers as server spans under those calls.
 */
describe('OpenTelemetry traces', () => {
  let backend: Backend;
  let dir: string;
  const procs: RunningProcess[] = [];
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-traces-'));
    backend = embeddedBackend();
    receiver = await otlpReceiver();
  });

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await backend?.cleanup();
    receiver?.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('one trace per attempt across scheduler and worker, exported over OTLP', async () => {
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '200' };
    const scheduler = await startScheduler(backend, { BATON_INSTANCE_ID: 'traces-1', ...otel });
    procs.push(scheduler);
    procs.push(
      await startTemplateWorker('traces-w1', scheduler.url, join(dir, 'runs.jsonl'), otel),
    );
    const api = new Api(scheduler.url);
    await api.waitForWorkers(1);
    const sync = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'traced' },
      params: { n: 1 },
    });
    // An async task: its run is polled, so the attempt makes several calls.
    const async = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'traced-async' },
      params: { ms: 1500 },
    });
    await api.until(sync, 'FINISH', 60_000);
    await api.until(async, 'FINISH', 60_000);

    for (const id of [sync, async]) {
      const traceId = attemptTraceId(id, 1);
      const rootId = attemptSpanId(id, 1);
      const trace = await eventually(
        async () => {
          const mine = receiver.spans.filter((s) => s.traceId === traceId);
          const root = mine.some((s) => s.spanId === rootId);
          const worker = mine.some((s) => s.service === 'baton-worker');
          return root && worker ? mine : undefined;
        },
        30_000,
        `the spans of task ${id}'s attempt`,
      );
      const root = trace.find((s) => s.spanId === rootId)!;
      expect(root).toMatchObject({ service: 'baton-scheduler' });
      expect(root.parentSpanId ?? '').toBe('');
      expect(root.attributes).toMatchObject({
        'baton.task_id': id,
        'baton.attempt': expect.anything(),
        'baton.outcome': 'SUCCESS',
      });
      const calls = trace.filter((s) => s.service === 'baton-scheduler' && s.kind === CLIENT);
      expect(calls.length).toBeGreaterThan(0);
      for (const c of calls) expect(c.parentSpanId).toBe(rootId);
      expect(calls.map((c) => c.attributes['baton.action'])).toEqual(
        expect.arrayContaining([expect.stringMatching(/^create/)]),
      );
      const answers = trace.filter((s) => s.service === 'baton-worker');
      expect(answers.length).toBeGreaterThan(0);
      const callIds = new Set(calls.map((c) => c.spanId));
      for (const a of answers) {
        expect(a.kind).toBe(SERVER);
        expect(callIds.has(a.parentSpanId ?? '')).toBe(true);
        expect(a.attributes['baton.task_id']).toBe(id);
      }
      // No span of another task's attempt is in this trace.
      expect(
        trace.filter(
          (s) =>
            s.attributes['baton.task_id'] !== undefined && s.attributes['baton.task_id'] !== id,
        ),
      ).toEqual([]);
    }
    // The async task was polled: its worker spans are more than a create.
    const asyncActions = receiver.spans
      .filter((s) => s.traceId === attemptTraceId(async, 1) && s.service === 'baton-worker')
      .map((s) => s.attributes['baton.action']);
    expect(new Set(asyncActions).size).toBeGreaterThan(1);
  });

  it('with no OTLP endpoint, neither the SDK nor the exporter is loaded', () => {
    // The scheduler's and the worker library's whole module graph, loaded as their mains load it.
    const dist = resolve(__dirname, '..', 'dist');
    const script = `
      require(${JSON.stringify(join(dist, 'apps/scheduler/src/bootstrap.js'))});
      require(${JSON.stringify(join(dist, 'apps/worker-template/src/bootstrap.js'))});
      const t = require(${JSON.stringify(join(dist, 'libs/task-contract/src/index.js'))});
      t.startTracing('probe');
      // (@opentelemetry/api, the no-op facade, is prom-client's own dependency.)
      const loaded = Object.keys(require.cache).filter((k) =>
        /@opentelemetry[\\/](sdk-trace|exporter|otlp|resources)/.test(k));
      const sdkHere = require.resolve('@opentelemetry/sdk-trace-base', { paths: [${JSON.stringify(dist)}] });
      console.log(JSON.stringify({ enabled: t.tracing().enabled, loaded, sdkHere: !!sdkHere }));`;
    const env = { ...process.env };
    delete env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { env }).toString()) as {
      enabled: boolean;
      loaded: string[];
      sdkHere: boolean;
    };
    // The SDK is installed (the check could see it), and was not loaded.
    expect(out).toEqual({ enabled: false, loaded: [], sdkHere: true });
  });
});
