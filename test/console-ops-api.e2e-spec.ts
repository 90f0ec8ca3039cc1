import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Api,
  Backend,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually } from './support/processes';
import { Receiver } from './support/webhooks';

jest.setTimeout(180_000);

/** Waits for end states: long, since a loaded two-core machine may be slow; never a measure. */
const SETTLE_MS = 60_000;

interface History {
  from: string;
  to: string;
  minutes: number;
  buckets: { minute: string; task_type: string; outcome: string; count: number }[];
}
interface Backlog {
  task_type: string;
  priority: number;
  count: number;
  oldest_due_at: string;
  oldest_wait_seconds: number;
}
interface RuleTest {
  matched: boolean;
  source_applies: boolean;
  task: Record<string, unknown> | null;
  task_error: string | null;
}

const echo = (name: string, extra: Record<string, unknown> = {}) => ({
  create_info: { task_type: 'demo.echo', task_name: name },
  ...extra,
});

/**
 * The API the console's overview, timers, log rules and webhooks pages use: tasks finished per
 * minute and the backlog, a timer's next fires and their preview, a rule tried on a line, and the
 * delivery log in pages. Against the real scheduler and template worker.
 */
describe('console operations API', () => {
  let backend: Backend;
  let dir: string;
  let scheduler: RunningProcess;
  let worker: RunningProcess;
  let receiver: Receiver;
  let api: Api;
  let viewer: Api;
  let tenantKey: Api;

  const key = async (name: string, role: string, tenant?: string): Promise<Api> => {
    const made = await api.call<{ key: string }>('POST', '/v1/api-keys', {
      name,
      role,
      ...(tenant ? { tenant } : {}),
    });
    expect(made.status).toBe(201);
    return new Api(scheduler.url, made.data.key);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-console-ops-api-'));
    backend = embeddedBackend();
    receiver = await Receiver.start();
    scheduler = await startScheduler(backend, { BATON_WEBHOOK_ALLOW: 'localhost' });
    worker = await startTemplateWorker('ops-api-w1', scheduler.url, join(dir, 'runs.jsonl'));
    api = new Api(scheduler.url);
    await api.waitForWorkers(1, 30_000);
    viewer = await key('ops-viewer', 'viewer');
    tenantKey = await key('ops-alpha', 'operator', 'alpha');
  });

  afterAll(async () => {
    await worker?.stop();
    await scheduler?.stop();
    await receiver?.proc.stop();
    await backend?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('counts finished tasks per minute by type and outcome, kept with each change', async () => {
    const ok = await Promise.all([1, 2, 3].map((i) => api.create(echo(`history ${i}`))));
    const failed = await api.create({
      create_info: { task_type: 'demo.flaky', task_name: 'history fails' },
      process_arg: { max_retry: 0 },
      params: { fail_times: 1 },
    });
    for (const id of [...ok, failed]) await api.until(id, 'FINISH', SETTLE_MS);

    const res = await viewer.call<History>('GET', '/v1/task-counts/history?minutes=5');
    expect(res.status).toBe(200);
    const { from, to, minutes, buckets } = res.data;
    expect(minutes).toBe(5);
    expect(Date.parse(to) - Date.parse(from)).toBeGreaterThanOrEqual(4 * 60_000);
    expect(Date.parse(to) - Date.parse(from)).toBeLessThan(5 * 60_000);
    const sum = (type: string, outcome: string): number =>
      buckets
        .filter((b) => b.task_type === type && b.outcome === outcome)
        .reduce((n, b) => n + b.count, 0);
    expect([sum('demo.echo', 'SUCCESS'), sum('demo.flaky', 'FAIL')]).toEqual([3, 1]);
    for (const b of buckets) {
      expect(Date.parse(b.minute) % 60_000).toBe(0);
      expect(Date.parse(b.minute)).toBeGreaterThanOrEqual(Date.parse(from));
    }
    // The default is the last hour.
    const hour = await api.call<History>('GET', '/v1/task-counts/history');
    expect(hour.data.minutes).toBe(60);

    for (const q of ['minutes=0', 'minutes=361', 'minutes=1e2', 'minutes=ten', 'since=1'])
      expect(await api.call('GET', `/v1/task-counts/history?${q}`)).toMatchObject({
        status: 400,
        code: 40000,
      });
    // Kept for every tenant together: as /v1/task-counts, a key of one tenant is refused.
    expect(await tenantKey.call('GET', '/v1/task-counts/history')).toMatchObject({
      status: 403,
    });
    expect(await tenantKey.call('GET', '/v1/task-counts/backlog')).toMatchObject({ status: 403 });
  });

  it('shows the backlog by type and priority with the oldest wait', async () => {
    await api.call('POST', '/v1/workers/ops-api-w1/drain', {});
    try {
      const ids = await Promise.all(
        [1, 2].map((i) =>
          api.create({
            create_info: { task_type: 'demo.echo', task_name: `waits ${i}`, important_level: 7 },
          }),
        ),
      );
      const row = await eventually(
        async () => {
          const res = await viewer.call<Backlog[]>('GET', '/v1/task-counts/backlog');
          return res.data.find(
            (b) => b.task_type === 'demo.echo' && b.priority === 7 && b.count === 2,
          );
        },
        SETTLE_MS,
        'two demo.echo tasks of priority 7 waiting',
      );
      // The oldest wait is since the earlier of the two tasks was meant to start: made without a
      // start time, its creation, as the tasks say.
      const made = await Promise.all(
        ids.map(
          async (id) =>
            (await api.call<{ created_at: string }>('GET', `/v1/tasks/${id}`)).data.created_at,
        ),
      );
      expect(Date.parse(row.oldest_due_at)).toBe(Math.min(...made.map((m) => Date.parse(m))));
      expect(row.oldest_wait_seconds).toBeGreaterThanOrEqual(0);
      await api.call('DELETE', '/v1/workers/ops-api-w1/drain');
      for (const id of ids) await api.until(id, 'FINISH', SETTLE_MS);
      await eventually(
        async () => {
          const res = await api.call<Backlog[]>('GET', '/v1/task-counts/backlog');
          return res.data.some((b) => b.task_type === 'demo.echo' && b.priority === 7)
            ? undefined
            : true;
        },
        SETTLE_MS,
        'the backlog empty again',
      );
    } finally {
      await api.call('DELETE', '/v1/workers/ops-api-w1/drain');
    }
  });

  it("previews a timer's next five fires with the Producer's schedule code, checked as a create is", async () => {
    const body = {
      name: 'berlin mornings',
      schedule: { kind: 'cron', cron: '0 30 9 * * 1-5', time_zone: 'Europe/Berlin' },
      task: echo('morning'),
    };
    const before = (await api.call<unknown[]>('GET', '/v1/timers')).data.length;
    const preview = await api.call<{ next_fires: string[] }>('POST', '/v1/timers/preview', body);
    expect(preview.status).toBe(200);
    const fires = preview.data.next_fires;
    expect(fires).toHaveLength(5);
    const berlin = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Berlin',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    for (const [i, f] of fires.entries()) {
      const parts = berlin.format(new Date(f));
      expect(parts).toMatch(/^(Mon|Tue|Wed|Thu|Fri),? 09:30:00$/);
      if (i > 0) expect(Date.parse(f)).toBeGreaterThan(Date.parse(fires[i - 1]));
    }
    expect(Date.parse(fires[0])).toBeGreaterThan(Date.now());
    // Nothing stored; a create of the same body fires at the same times, as the list shows.
    expect((await api.call<unknown[]>('GET', '/v1/timers')).data).toHaveLength(before);
    const made = await api.call<{ timer_id: string; next_fires: string[] }>(
      'POST',
      '/v1/timers',
      body,
    );
    expect(made.data.next_fires).toEqual(fires);
    const listed = await viewer.call<{ timer_id: string; next_fires: string[] }[]>(
      'GET',
      '/v1/timers',
    );
    expect(listed.data.find((t) => t.timer_id === made.data.timer_id)?.next_fires).toEqual(fires);
    // A disabled timer fires none.
    await api.call('PATCH', `/v1/timers/${made.data.timer_id}`, { enabled: false });
    const off = await api.call<{ next_fires: string[] }>('GET', `/v1/timers/${made.data.timer_id}`);
    expect(off.data.next_fires).toEqual([]);

    // An interval from a given instant, until an end: fewer than five when the window ends.
    const interval = await api.call<{ next_fires: string[] }>('POST', '/v1/timers/preview', {
      name: 'poll',
      schedule: { kind: 'interval', every_ms: 600_000, at: '2030-01-01T00:00:00.000Z' },
      end_at: '2030-01-01T00:25:00.000Z',
      task: echo('poll'),
    });
    expect(interval.data.next_fires).toEqual([
      '2030-01-01T00:00:00.000Z',
      '2030-01-01T00:10:00.000Z',
      '2030-01-01T00:20:00.000Z',
    ]);
  });

  it('refuses a bad timer body in the preview exactly as the create refuses it, storing nothing', async () => {
    const bad = [
      { schedule: { kind: 'cron', cron: '61 * * * *' }, task: echo('x') },
      { schedule: { kind: 'cron', cron: '* * *' }, task: echo('x') },
      {
        schedule: { kind: 'cron', cron: '0 0 3 * * *', time_zone: 'Mars/Olympus' },
        task: echo('x'),
      },
      { schedule: { kind: 'interval', every_ms: 50 }, task: echo('x') },
      { schedule: { kind: 'once' }, task: echo('x') },
      {
        schedule: { kind: 'cron', cron: '0 0 3 * * *' },
        task: { create_info: { task_type: 'no.such.type', task_name: 'x' } },
      },
      { schedule: { kind: 'cron', cron: '0 0 3 * * *' }, task: echo('x'), colour: 'red' },
    ];
    const before = (await api.call<unknown[]>('GET', '/v1/timers')).data.length;
    for (const b of bad) {
      const body = { name: 'bad', ...b };
      const preview = await api.call('POST', '/v1/timers/preview', body);
      const create = await api.call('POST', '/v1/timers', body);
      expect(preview.status).toBe(400);
      expect([preview.status, preview.code, preview.message]).toEqual([
        create.status,
        create.code,
        create.message,
      ]);
    }
    expect((await api.call<unknown[]>('GET', '/v1/timers')).data).toHaveLength(before);
    const cron = await api.call('POST', '/v1/timers/preview', { name: 'bad', ...bad[0] });
    expect(cron.message).toContain('61');
    // Rights as for a create: a viewer may not; a key of one tenant only in its own.
    expect(
      await viewer.call('POST', '/v1/timers/preview', {
        name: 'v',
        schedule: { kind: 'interval', every_ms: 60_000 },
        task: echo('v'),
      }),
    ).toMatchObject({ status: 403 });
    const foreign = await tenantKey.call('POST', '/v1/timers/preview', {
      name: 'f',
      schedule: { kind: 'interval', every_ms: 60_000 },
      task: echo('f', { tenant: 'beta' }),
    });
    expect(foreign).toMatchObject({ status: 403, code: 40300 });
  });

  it('tries a log rule on a line with the LogDumper matcher, saving nothing and making no task', async () => {
    const rule = {
      name: 'disk full',
      sources: ['http:*'],
      match: { regex: 'disk full on (?<host>[\\w.-]+)' },
      template: {
        create_info: { task_type: 'demo.echo', task_name: 'clean {{host}}' },
        params: { host: '{{host}}', line: '{{_line}}' },
      },
    };
    const rulesBefore = (await api.call<unknown[]>('GET', '/v1/log-rules')).data.length;
    const tasksBefore = (await api.call<{ items: unknown[] }>('GET', '/v1/tasks?limit=500')).data
      .items.length;

    const hit = await api.call<RuleTest>('POST', '/v1/log-rules/test', {
      rule,
      line: 'ERROR disk full on db-7.prod',
    });
    expect(hit.status).toBe(200);
    expect(hit.data).toMatchObject({ matched: true, source_applies: true, task_error: null });
    expect(hit.data.task).toMatchObject({
      create_info: { task_type: 'demo.echo', task_name: 'clean db-7.prod' },
      params: { host: 'db-7.prod', line: 'ERROR disk full on db-7.prod' },
      labels: { log_source: 'http:test' },
    });
    expect(String(hit.data.task?.idempotency_key)).toMatch(/^log:http:test:test:/);

    const miss = await api.call<RuleTest>('POST', '/v1/log-rules/test', {
      rule,
      line: 'all good on db-7',
    });
    expect(miss.data).toEqual({
      matched: false,
      source_applies: true,
      task: null,
      task_error: null,
    });

    const elsewhere = await api.call<RuleTest>('POST', '/v1/log-rules/test', {
      rule,
      line: 'disk full on db-1',
      source: 'file:app',
    });
    expect([elsewhere.data.matched, elsewhere.data.source_applies]).toEqual([true, false]);

    // A JSON rule reads the fields of a JSON line.
    const json = await api.call<RuleTest>('POST', '/v1/log-rules/test', {
      rule: {
        name: 'oom',
        match: { json: { level: { equals: 'error' }, 'ctx.host': { exists: true } } },
        template: echo('restart {{ctx.host}}'),
      },
      line: '{"level":"error","ctx":{"host":"web-3"}}',
    });
    expect(json.data.task).toMatchObject({ create_info: { task_name: 'restart web-3' } });

    // A capture that makes a task the scheduler would refuse: matched, with the reason.
    const refused = await api.call<RuleTest>('POST', '/v1/log-rules/test', {
      rule: {
        name: 'typed by the line',
        match: { regex: 'run (?<type>[a-z.]+)' },
        template: { create_info: { task_type: '{{type}}', task_name: 'from log' } },
      },
      line: 'run no.such.type',
    });
    expect(refused.data.matched).toBe(true);
    expect(refused.data.task_error).toContain('no.such.type');

    // Nothing was saved and no task was made.
    expect((await api.call<unknown[]>('GET', '/v1/log-rules')).data).toHaveLength(rulesBefore);
    expect(
      (await api.call<{ items: unknown[] }>('GET', '/v1/tasks?limit=500')).data.items,
    ).toHaveLength(tasksBefore);
  });

  it('refuses a bad rule in the test exactly as the create refuses it', async () => {
    const template = echo('x');
    const bad = [
      { name: 'lookbehind', match: { regex: '(?<=disk) full' }, template },
      { name: 'unknown group', match: { regex: 'disk (?<host>\\w+)' }, template: echo('{{hots}}') },
      { name: 'source', sources: ['ftp:x'], match: { regex: 'x' }, template },
      { name: 'key', match: { regex: 'x' }, template: { ...template, idempotency_key: 'k' } },
      {
        name: 'type',
        match: { regex: 'x' },
        template: { create_info: { task_type: 'no.such.type', task_name: 'x' } },
      },
    ];
    for (const rule of bad) {
      const tested = await api.call('POST', '/v1/log-rules/test', { rule, line: 'x' });
      const created = await api.call('POST', '/v1/log-rules', rule);
      expect(tested.status).toBe(400);
      expect([tested.status, tested.code, tested.message]).toEqual([
        created.status,
        created.code,
        created.message,
      ]);
    }
    for (const body of [
      { rule: bad[0] },
      { rule: { name: 'ok', match: { regex: 'x' }, template }, line: '' },
      { rule: { name: 'ok', match: { regex: 'x' }, template }, line: 'x', source: 'ftp:x' },
      { rule: { name: 'ok', match: { regex: 'x' }, template }, line: 'x', extra: 1 },
    ])
      expect(await api.call('POST', '/v1/log-rules/test', body)).toMatchObject({ status: 400 });
    expect(
      await viewer.call('POST', '/v1/log-rules/test', {
        rule: { name: 'ok', match: { regex: 'x' }, template },
        line: 'x',
      }),
    ).toMatchObject({ status: 403 });
  });

  it("pages a subscription's delivery log with before, newest first", async () => {
    const hook = await api.call<{ webhook_id: string; secret: string }>('POST', '/v1/webhooks', {
      url: receiver.hook('paged'),
      events: ['task.finished'],
      task_types: ['demo.nothing'],
    });
    expect(hook.status).toBe(201);
    await receiver.control('secret', { name: 'paged', secrets: [hook.data.secret] });
    const id = hook.data.webhook_id;
    const sent: string[] = [];
    for (let i = 0; i < 5; i++)
      sent.push(
        (await api.call<{ message_id: string }>('POST', `/v1/webhooks/${id}/test`)).data.message_id,
      );
    const pages: string[][] = [];
    let before: string | undefined;
    for (let i = 0; i < 4; i++) {
      const page = await viewer.call<{ message_id: string }[]>(
        'GET',
        `/v1/webhooks/${id}/deliveries?limit=2${before ? `&before=${before}` : ''}`,
      );
      expect(page.status).toBe(200);
      pages.push(page.data.map((m) => m.message_id));
      if (page.data.length < 2) break;
      before = page.data[page.data.length - 1].message_id;
    }
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
    expect(pages.flat()).toEqual([...sent].reverse());

    expect(
      await api.call('GET', `/v1/webhooks/${id}/deliveries?before=msg_01ARZ3NDEKTSV4RRFFQ69G5FAV`),
    ).toMatchObject({ status: 404 });
    expect(await api.call('GET', `/v1/webhooks/${id}/deliveries?before=nope`)).toMatchObject({
      status: 400,
    });
    // Every ping reaches the receiver, signed.
    await eventually(
      async () =>
        (await receiver.got('paged')).filter((g) => g.verified).length >= 5 ? true : undefined,
      SETTLE_MS,
      'the five pings delivered',
    );
  });
});
