import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { authHeaders } from '../libs/task-contract/src';
import {
  ADMIN_KEY,
  Api,
  Backend,
  SECRET,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { Document, Operation, Response, deref, departures, readDocument } from './support/openapi';
import { RunningProcess, eventually } from './support/processes';

jest.setTimeout(180_000);

/** One request of the walk. */
interface Call {
  /** The path with its parameters filled (and a query string, if any). */
  path: string;
  body?: unknown;
  /** The API key to send (admin by default); null: none. */
  key?: string | null;
  /** Signed as a worker (HMAC), with this fence header if given. */
  signed?: boolean;
  fence?: number;
}

interface Answer {
  status: number;
  contentType: string;
  body: unknown;
}

interface Task {
  task_id: string;
  task_status: string;
  attempt: number;
  fence: number;
}

const UNKNOWN_ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';

describe('the OpenAPI document tells the truth: every route, called for real', () => {
  let backend: Backend;
  let dir: string;
  let scheduler: RunningProcess;
  let worker: RunningProcess;
  let api: Api;
  let doc: Document;

  const send = async (method: string, call: Call): Promise<Answer> => {
    const text = call.body === undefined ? undefined : JSON.stringify(call.body);
    const headers: Record<string, string> = {
      ...(text === undefined ? {} : { 'content-type': 'application/json' }),
    };
    if (call.signed) {
      if (call.fence !== undefined) headers['x-baton-fence'] = String(call.fence);
      Object.assign(
        headers,
        authHeaders(
          { mode: 'hmac', secret: SECRET },
          {
            method,
            pathWithQuery: call.path,
            fence: call.fence === undefined ? undefined : String(call.fence),
            body: text ?? '',
          },
        ),
      );
    } else if (call.key !== null) headers.authorization = `Bearer ${call.key ?? ADMIN_KEY}`;
    const res = await request(`${scheduler.url}${call.path}`, {
      method: method as 'GET',
      headers,
      body: text,
    });
    const contentType = String(res.headers['content-type'] ?? '');
    const raw = await res.body.text();
    return {
      status: res.statusCode,
      contentType,
      body: contentType.startsWith('application/json') ? JSON.parse(raw) : raw,
    };
  };

  /**
   * A happy path's call: sent again while the task is busy under a runner's claim for a moment
   * (409, 40904: "try again shortly"), as the document tells clients to.
   */
  const sendWhenFree = async (method: string, call: Call): Promise<Answer> => {
    let last: Answer | undefined;
    const free = await eventually(
      async () => {
        last = await send(method, call);
        const busy = last.status === 409 && (last.body as { code?: number }).code === 40904;
        return busy ? undefined : last;
      },
      // A drive holds the task for a moment; on a loaded box a moment is seconds.
      30_000,
      `${method} ${call.path} free`,
    ).catch(() => undefined);
    // Busy to the end: the last answer; never answered: the call again, its error thrown.
    return free ?? last ?? send(method, call);
  };

  const task = (id: string) => api.call<Task>('GET', `/v1/tasks/${id}`).then((r) => r.data);
  const until = (id: string, test: (t: Task) => boolean, what: string): Promise<Task> =>
    eventually(
      async () => {
        const t = await task(id);
        return test(t) ? t : undefined;
      },
      60_000,
      what,
    );

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-openapi-walk-'));
    backend = embeddedBackend();
    scheduler = await startScheduler(backend);
    worker = await startTemplateWorker('walk-w1', scheduler.url, join(dir, 'runs.jsonl'), {
      WORKER_ROLLBACK_DIR: join(dir, 'rollback'),
    });
    api = new Api(scheduler.url);
    await api.waitForWorkers(1, 30_000);
    doc = readDocument('scheduler.v1.json');
  });

  afterAll(async () => {
    await worker?.stop();
    await scheduler?.stop();
    await backend?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The tasks and things the happy paths act on, each in the state its route needs. */
  async function stage() {
    // A failed run waits ten minutes for its retry: long enough to retry or roll it back by hand.
    await api.call('PATCH', '/v1/task-types/demo.rollback', {
      backoff_base_ms: 600_000,
      backoff_max_ms: 600_000,
    });
    const failing = async (name: string): Promise<string> => {
      const id = await api.create({
        create_info: { task_type: 'demo.rollback', task_name: name },
        process_arg: { max_retry: 3 },
        params: { fail: true },
      });
      await until(id, (t) => t.task_status === 'FAIL', `${name} to wait in FAIL`);
      return id;
    };
    const sleeping = async (name: string): Promise<string> => {
      const id = await api.create({
        create_info: { task_type: 'demo.sleep', task_name: name },
        params: { seconds: 300, tick_ms: 200 },
      });
      await until(id, (t) => t.task_status === 'RUNNING', `${name} to run`);
      return id;
    };
    const later = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'later' },
      process_arg: { start_time: new Date(Date.now() + 3_600_000).toISOString() },
    });
    const done = await api.create({ create_info: { task_type: 'demo.echo', task_name: 'done' } });
    await api.until(done);
    const rerun = await api.create({ create_info: { task_type: 'demo.echo', task_name: 'rerun' } });
    await api.until(rerun);
    const key = await api.call<{ key_id: string }>('POST', '/v1/api-keys', {
      name: 'walk-revoked',
      role: 'viewer',
    });
    const timer = await api.call<{ timer_id: string }>('POST', '/v1/timers', {
      name: 'walk',
      schedule: { kind: 'cron', cron: '0 0 3 * * *' },
      task: { create_info: { task_type: 'demo.echo', task_name: 'walk' } },
    });
    // Fired now by the walk (after the first timer's DELETE, as the document lists it).
    const firedTimer = await api.call<{ timer_id: string }>('POST', '/v1/timers', {
      name: 'walk run now',
      schedule: { kind: 'cron', cron: '0 0 3 * * *' },
      task: { create_info: { task_type: 'demo.echo', task_name: 'walk run now' } },
    });
    const rule = await api.call<{ rule_id: string }>('POST', '/v1/log-rules', {
      name: 'walk',
      match: { regex: 'walk' },
      template: { create_info: { task_type: 'demo.echo', task_name: 'walk' } },
    });
    const hook = async (name: string): Promise<string> => {
      const r = await api.call<{ webhook_id: string }>('POST', '/v1/webhooks', {
        url: `https://hooks.example.com/${name}`,
        events: ['task.finished'],
      });
      expect(r).toMatchObject({ status: 201 });
      return r.data.webhook_id;
    };
    const webhookId = await hook('walk');
    // A run that waits for a signal stays RUNNING: one to pause and continue, one to cancel, one
    // to signal.
    await api.call('POST', '/v1/topologies', {
      name: 'walk-wait',
      nodes: [{ key: 'approve', wait: { signal: 'approved' } }],
    });
    // A run waiting for a person: to approve, to reject.
    await api.call('POST', '/v1/topologies', {
      name: 'walk-approval',
      nodes: [{ key: 'gate', approval: { timeout_seconds: 3600, on_timeout: 'reject' } }],
    });
    // A run that failed (its first node fails for good): to retry, to re-run a node of, to skip
    // a node of.
    await api.call('POST', '/v1/topologies', {
      name: 'walk-fail',
      nodes: [
        {
          key: 'a',
          task: {
            create_info: { task_type: 'demo.rollback' },
            params: { fail: true },
            process_arg: { max_retry: 0 },
          },
        },
        { key: 'b', depends_on: ['a'], task: { create_info: { task_type: 'demo.echo' } } },
      ],
    });
    const failedRun = async (): Promise<string> => {
      const r = await api.call<{ run_id: string }>('POST', '/v1/topologies/walk-fail/runs', {});
      await eventually(
        async () =>
          (await api.call<{ status: string }>('GET', `/v1/topology-runs/${r.data.run_id}`)).data
            .status === 'FINISH'
            ? true
            : undefined,
        60_000,
        'a walk-fail run failing',
      );
      return r.data.run_id;
    };
    const waiting = async (name = 'walk-wait'): Promise<string> => {
      const r = await api.call<{ run_id: string }>('POST', `/v1/topologies/${name}/runs`, {});
      await eventually(
        async () =>
          (
            await api.call<{ nodes: { status: string }[] }>(
              'GET',
              `/v1/topology-runs/${r.data.run_id}`,
            )
          ).data.nodes[0].status === 'ACTIVE'
            ? true
            : undefined,
        60_000,
        'a walk-wait run waiting',
      );
      return r.data.run_id;
    };
    const ping = await api.call<{ message_id: string }>('POST', `/v1/webhooks/${webhookId}/test`);
    // A worker for the fleet's controls (drain, blacklist) to act on, serving a type of its own.
    const fleetWorker = await send('POST', {
      path: '/v1/workers',
      signed: true,
      body: {
        worker_id: 'walk-fleet',
        url: 'http://127.0.0.1:9/',
        version: '1.0.0',
        contract_version: '1.2.0',
        capacity: 1,
        task_types: [{ task_type: 'demo.fleet', blocking: 'sync', implements: [] }],
      },
    });
    expect(fleetWorker.status).toBe(200);
    return {
      later,
      done,
      rerun,
      webhookId,
      doomedWebhookId: await hook('walk-deleted'),
      messageId: ping.data.message_id,
      retry: await failing('to retry'),
      rollback: await failing('to roll back'),
      pause: await sleeping('to pause'),
      cancel: await sleeping('to cancel'),
      callbacks: await sleeping('to report on'),
      notified: await sleeping('to notify'),
      // Runs holding a lock key, so its locks answer a held key.
      locked: await (async () => {
        const id = await api.create({
          create_info: { task_type: 'demo.sleep', task_name: 'holds walk-db' },
          params: { seconds: 300, tick_ms: 200 },
          lock_keys: ['walk-db'],
        });
        await until(id, (t) => t.task_status === 'RUNNING', 'holds walk-db to run');
        return id;
      })(),
      keyId: key.data.key_id,
      timerId: timer.data.timer_id,
      firedTimerId: firedTimer.data.timer_id,
      ruleId: rule.data.rule_id,
      runPaused: await waiting(),
      runCancelled: await waiting(),
      runSignalled: await waiting(),
      runApproved: await waiting('walk-approval'),
      runRejected: await waiting('walk-approval'),
      runRetried: await failedRun(),
      runRerun: await failedRun(),
      runSkipped: await failedRun(),
    };
  }

  it('checks answers with a schema checker that finds what departs', () => {
    const task = { $ref: '#/components/schemas/TaskDto' };
    expect(departures(doc, task, { task_id: 1 })).toEqual(
      expect.arrayContaining(['$.task_id: not a string', '$.task_type: missing (required)']),
    );
    expect(departures(doc, task, null)).toEqual(['$: null where the schema has no null']);
    const page = { $ref: '#/components/schemas/TaskPageDto' };
    expect(departures(doc, page, { items: [], next_cursor: null, extra: 1 })).toEqual([
      '$.extra: not in the schema',
    ]);
  });

  it('answers every route as documented, on its happy path and on an error', async () => {
    const s = await stage();
    const registration = {
      worker_id: 'walk-registered',
      url: 'http://127.0.0.1:9/',
      version: '1.0.0',
      contract_version: '1.2.0',
      capacity: 1,
      task_types: [{ task_type: 'demo.walk', blocking: 'sync', implements: [] }],
    };
    /** A worker's callback on a running task, with the fence and attempt of its run. */
    const callback = async (id: string, body: Record<string, unknown> = {}) => {
      const t = await task(id);
      return { path: '', body: { attempt: t.attempt, ...body }, signed: true, fence: t.fence };
    };
    const happy: Record<string, () => Promise<Call> | Call> = {
      'GET /metrics': () => ({ path: '/metrics', key: null }),
      'GET /health': () => ({ path: '/health', key: null }),
      'GET /health/live': () => ({ path: '/health/live', key: null }),
      'GET /health/ready': () => ({ path: '/health/ready', key: null }),
      'POST /v1/api-keys': () => ({ path: '/v1/api-keys' }),
      'GET /v1/api-keys': () => ({ path: '/v1/api-keys' }),
      'DELETE /v1/api-keys/{key_id}': () => ({ path: `/v1/api-keys/${s.keyId}` }),
      'GET /v1/audit': () => ({ path: '/v1/audit?limit=5' }),
      'GET /v1/task-types': () => ({ path: '/v1/task-types' }),
      'GET /v1/task-types/{task_type}': () => ({ path: '/v1/task-types/demo.echo' }),
      'PATCH /v1/task-types/{task_type}': () => ({ path: '/v1/task-types/demo.echo' }),
      'GET /v1/tenants': () => ({ path: '/v1/tenants' }),
      'GET /v1/tenants/{tenant}/limits': () => ({ path: '/v1/tenants/payments/limits' }),
      'PUT /v1/tenants/{tenant}/limits': () => ({ path: '/v1/tenants/payments/limits' }),
      'DELETE /v1/tenants/{tenant}/limits': () => ({ path: '/v1/tenants/payments/limits' }),
      'POST /v1/workers': () => ({ path: '/v1/workers', body: registration, signed: true }),
      'GET /v1/workers': () => ({ path: '/v1/workers' }),
      'PUT /v1/workers/{worker_id}/heartbeat': () => ({
        path: '/v1/workers/walk-registered/heartbeat',
        body: {},
        signed: true,
      }),
      'DELETE /v1/workers/{worker_id}': () => ({
        path: '/v1/workers/walk-registered',
        signed: true,
      }),
      'POST /v1/workers/{worker_id}/drain': () => ({ path: '/v1/workers/walk-fleet/drain' }),
      'DELETE /v1/workers/{worker_id}/drain': () => ({ path: '/v1/workers/walk-fleet/drain' }),
      'POST /v1/workers/{worker_id}/blacklist': () => ({
        path: '/v1/workers/walk-fleet/blacklist',
      }),
      'DELETE /v1/workers/{worker_id}/blacklist': () => ({
        path: '/v1/workers/walk-fleet/blacklist',
      }),
      'POST /v1/tasks': () => ({ path: '/v1/tasks' }),
      'GET /v1/tasks': () => ({ path: '/v1/tasks?limit=3&status=FINISH,RUNNING' }),
      'GET /v1/task-counts': () => ({ path: '/v1/task-counts' }),
      // A live stream: ended by the scheduler after a second, so its whole answer can be read.
      'GET /v1/task-changes/stream': () => ({ path: '/v1/task-changes/stream?max_seconds=1' }),
      'GET /v1/task-counts/history': () => ({ path: '/v1/task-counts/history?minutes=30' }),
      'GET /v1/task-counts/backlog': () => ({ path: '/v1/task-counts/backlog' }),
      'POST /v1/tasks/batch': () => ({ path: '/v1/tasks/batch' }),
      'GET /v1/tasks/{task_id}': () => ({ path: `/v1/tasks/${s.done}` }),
      'GET /v1/tasks/{task_id}/events': () => ({ path: `/v1/tasks/${s.done}/events` }),
      'GET /v1/tasks/{task_id}/attempts': () => ({ path: `/v1/tasks/${s.done}/attempts` }),
      'GET /v1/tasks/{task_id}/locks': () => ({ path: `/v1/tasks/${s.locked}/locks` }),
      'POST /v1/tasks/{task_id}/pause': () => ({ path: `/v1/tasks/${s.pause}/pause` }),
      'POST /v1/tasks/{task_id}/continue': () => ({ path: `/v1/tasks/${s.pause}/continue` }),
      'POST /v1/tasks/{task_id}/cancel': () => ({ path: `/v1/tasks/${s.cancel}/cancel` }),
      'POST /v1/tasks/{task_id}/retry': () => ({ path: `/v1/tasks/${s.retry}/retry` }),
      'POST /v1/tasks/{task_id}/rollback': () => ({ path: `/v1/tasks/${s.rollback}/rollback` }),
      'POST /v1/tasks/{task_id}/rerun': () => ({ path: `/v1/tasks/${s.rerun}/rerun` }),
      'PUT /v1/tasks/{task_id}/params': () => ({ path: `/v1/tasks/${s.later}/params` }),
      'PUT /v1/tasks/{task_id}/notify': async () => ({
        ...(await callback(s.notified, { task_status: 'SUCCESS', result: { by: 'walk' } })),
        path: `/v1/tasks/${s.notified}/notify`,
      }),
      'PUT /v1/tasks/{task_id}/heartbeat': async () => ({
        ...(await callback(s.callbacks)),
        path: `/v1/tasks/${s.callbacks}/heartbeat`,
      }),
      'PUT /v1/tasks/{task_id}/progress': async () => ({
        ...(await callback(s.callbacks, { percent: 42, step: 'walking' })),
        path: `/v1/tasks/${s.callbacks}/progress`,
      }),
      'PUT /v1/tasks/{task_id}/logs': async () => ({
        ...(await callback(s.callbacks, {
          lines: [{ seq: 900, at: '2026-01-01T00:00:00.000Z', level: 'info', message: 'walked' }],
        })),
        path: `/v1/tasks/${s.callbacks}/logs`,
      }),
      'PUT /v1/attempt-logs': async () => {
        const t = await task(s.callbacks);
        const line = { seq: 901, at: '2026-01-01T00:00:01.000Z', level: 'info', message: 'walked' };
        return {
          path: '/v1/attempt-logs',
          body: {
            batches: [
              { task_id: s.callbacks, attempt: t.attempt, fence: t.fence, lines: [line] },
              { task_id: 'no-such-task', attempt: 1, fence: 1, lines: [line] },
            ],
          },
          signed: true,
          fence: 0,
        };
      },
      'GET /v1/tasks/{task_id}/attempts/{attempt}/logs': () => ({
        path: `/v1/tasks/${s.done}/attempts/1/logs?limit=5&level=debug`,
      }),
      'GET /v1/tasks/{task_id}/attempts/{attempt}/logs/stream': () => ({
        path: `/v1/tasks/${s.done}/attempts/1/logs/stream?max_seconds=1`,
      }),
      'POST /v1/timers': () => ({ path: '/v1/timers' }),
      'POST /v1/timers/preview': () => ({ path: '/v1/timers/preview' }),
      'GET /v1/timers': () => ({ path: '/v1/timers' }),
      'GET /v1/timers/{timer_id}': () => ({ path: `/v1/timers/${s.timerId}` }),
      'PATCH /v1/timers/{timer_id}': () => ({ path: `/v1/timers/${s.timerId}` }),
      'POST /v1/timers/{timer_id}/run': () => ({ path: `/v1/timers/${s.firedTimerId}/run` }),
      'DELETE /v1/timers/{timer_id}': () => ({ path: `/v1/timers/${s.timerId}` }),
      'GET /v1/producer': () => ({ path: '/v1/producer' }),
      'POST /v1/log-rules': () => ({ path: '/v1/log-rules' }),
      'POST /v1/log-rules/test': () => ({ path: '/v1/log-rules/test' }),
      'GET /v1/log-rules': () => ({ path: '/v1/log-rules' }),
      'GET /v1/log-rules/{rule_id}': () => ({ path: `/v1/log-rules/${s.ruleId}` }),
      'PATCH /v1/log-rules/{rule_id}': () => ({ path: `/v1/log-rules/${s.ruleId}` }),
      'DELETE /v1/log-rules/{rule_id}': () => ({ path: `/v1/log-rules/${s.ruleId}` }),
      'POST /v1/logs': () => ({ path: '/v1/logs' }),
      'POST /v1/webhooks': () => ({ path: '/v1/webhooks' }),
      'GET /v1/webhooks': () => ({ path: '/v1/webhooks' }),
      'POST /v1/webhooks/callback-secret': () => ({
        path: '/v1/webhooks/callback-secret?tenant=payments',
      }),
      'GET /v1/webhooks/{webhook_id}': () => ({ path: `/v1/webhooks/${s.webhookId}` }),
      'PATCH /v1/webhooks/{webhook_id}': () => ({ path: `/v1/webhooks/${s.webhookId}` }),
      'DELETE /v1/webhooks/{webhook_id}': () => ({ path: `/v1/webhooks/${s.doomedWebhookId}` }),
      'POST /v1/webhooks/{webhook_id}/rotate-secret': () => ({
        path: `/v1/webhooks/${s.webhookId}/rotate-secret`,
      }),
      'POST /v1/webhooks/{webhook_id}/test': () => ({ path: `/v1/webhooks/${s.webhookId}/test` }),
      'GET /v1/webhooks/{webhook_id}/deliveries': () => ({
        path: `/v1/webhooks/${s.webhookId}/deliveries?limit=5&before=${s.messageId}`,
      }),
      'POST /v1/webhooks/{webhook_id}/deliveries/{message_id}/redeliver': () => ({
        path: `/v1/webhooks/${s.webhookId}/deliveries/${s.messageId}/redeliver`,
      }),
      'POST /v1/webhooks/{webhook_id}/redeliver': () => ({
        path: `/v1/webhooks/${s.webhookId}/redeliver`,
      }),
      'GET /v1/tasks/{task_id}/deliveries': () => ({ path: `/v1/tasks/${s.done}/deliveries` }),
      'GET /v1/logs/stats': () => ({ path: '/v1/logs/stats' }),
      'POST /v1/topologies': () => ({ path: '/v1/topologies' }),
      'POST /v1/topologies/check': () => ({ path: '/v1/topologies/check' }),
      'GET /v1/topologies': () => ({ path: '/v1/topologies' }),
      'GET /v1/topologies/{topology}': () => ({ path: '/v1/topologies/walk-wait' }),
      'GET /v1/topologies/{topology}/versions': () => ({
        path: '/v1/topologies/walk-wait/versions',
      }),
      'POST /v1/topologies/{topology}/runs': () => ({ path: '/v1/topologies/walk-wait/runs' }),
      'GET /v1/topology-runs': () => ({ path: '/v1/topology-runs?name=walk-wait&limit=2' }),
      'GET /v1/topology-runs/{run_id}': () => ({ path: `/v1/topology-runs/${s.runPaused}` }),
      'GET /v1/topology-runs/{run_id}/history': () => ({
        path: `/v1/topology-runs/${s.runRerun}/history`,
      }),
      'POST /v1/topology-runs/{run_id}/cancel': () => ({
        path: `/v1/topology-runs/${s.runCancelled}/cancel`,
      }),
      'POST /v1/topology-runs/{run_id}/pause': () => ({
        path: `/v1/topology-runs/${s.runPaused}/pause`,
      }),
      'POST /v1/topology-runs/{run_id}/continue': () => ({
        path: `/v1/topology-runs/${s.runPaused}/continue`,
      }),
      'POST /v1/topology-runs/{run_id}/retry': () => ({
        path: `/v1/topology-runs/${s.runRetried}/retry`,
      }),
      'POST /v1/topology-runs/{run_id}/nodes/{node}/rerun': () => ({
        path: `/v1/topology-runs/${s.runRerun}/nodes/a/rerun`,
      }),
      'POST /v1/topology-runs/{run_id}/nodes/{node}/skip': () => ({
        path: `/v1/topology-runs/${s.runSkipped}/nodes/a/skip`,
      }),
      'POST /v1/topology-runs/{run_id}/signal': () => ({
        path: `/v1/topology-runs/${s.runSignalled}/signal`,
      }),
      'GET /v1/topology-approvals': () => ({ path: '/v1/topology-approvals?limit=10' }),
      'POST /v1/topology-runs/{run_id}/nodes/{node}/approve': () => ({
        path: `/v1/topology-runs/${s.runApproved}/nodes/gate/approve`,
      }),
      'POST /v1/topology-runs/{run_id}/nodes/{node}/reject': () => ({
        path: `/v1/topology-runs/${s.runRejected}/nodes/gate/reject`,
      }),
    };

    const report: string[] = [];
    const checkAnswer = (route: string, op: Operation, answer: Answer, happyPath: boolean) => {
      const documented = Object.keys(op.responses);
      expect({
        route,
        status: answer.status,
        documented: documented.includes(String(answer.status)),
      }).toEqual({
        route,
        status: answer.status,
        documented: true,
      });
      expect({ route, success: answer.status < 300, answer: answer.body }).toEqual({
        route,
        success: happyPath,
        answer: answer.body,
      });
      const response = deref<Response>(doc, op.responses[String(answer.status)]);
      const [mediaType, media] = Object.entries(response.content ?? {})[0] ?? [];
      expect({ route, contentType: answer.contentType.split(';')[0] }).toEqual({
        route,
        contentType: mediaType,
      });
      expect({ route, departures: departures(doc, media!.schema!, answer.body) }).toEqual({
        route,
        departures: [],
      });
      if (!happyPath) {
        // The code is one of those the document lists under this status.
        const code = String((answer.body as { code: number }).code);
        expect({ route, code, listed: Object.keys(media!.examples ?? {}).includes(code) }).toEqual({
          route,
          code,
          listed: true,
        });
      }
      report.push(`${route.padEnd(40)} ${answer.status}`);
    };

    // The routes in the document's order; the happy paths that end a thing (DELETE) come last
    // within each path, as they are listed.
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const route = `${method.toUpperCase()} ${path}`;
        const make = happy[route];
        expect({ route, hasHappyPath: make !== undefined }).toEqual({ route, hasHappyPath: true });
        const call = await make();
        const media = op.requestBody?.content['application/json'];
        if (media && call.body === undefined) {
          // The documented examples, each sent as given: they must all work.
          const examples = Object.values(media.examples ?? {});
          expect({ route, examples: examples.length > 0 }).toEqual({ route, examples: true });
          for (const example of examples) {
            const value = deref<{ value?: unknown }>(doc, example).value;
            checkAnswer(
              route,
              op,
              await sendWhenFree(method.toUpperCase(), { ...call, body: value }),
              true,
            );
          }
        } else {
          checkAnswer(route, op, await sendWhenFree(method.toUpperCase(), call), true);
        }

        // One error each: unsigned for workers' routes; else a body the route refuses, an id it
        // does not know, or no key.
        if (op.security === undefined) continue;
        const signed = op.security.some((x) => 'hmac' in x);
        const idParam = (op.parameters ?? []).find((p) => p.in === 'path' && p.name !== 'tenant');
        const error: Call = signed
          ? { path: call.path, body: call.body, key: null }
          : media
            ? { path: call.path, body: { not_a_field: true } }
            : idParam
              ? {
                  path: path.replace(/\{([a-z_]+)\}/g, (_, p: string) =>
                    p === 'task_type' ? 'no.such.type' : p === 'tenant' ? 'payments' : UNKNOWN_ID,
                  ),
                }
              : { path: call.path, key: null };
        checkAnswer(route, op, await send(method.toUpperCase(), error), false);
      }
    }
    console.log(`OpenAPI walk:\n${report.join('\n')}`);
    expect(report.length).toBeGreaterThan(80);
  });
});
