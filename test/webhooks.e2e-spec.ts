import { spawnSync } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { internalRange } from '@baton/task-contract';
import {
  Api,
  Backend,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { ROOT, RunningProcess, eventually, holds } from './support/processes';
import { Got, Receiver } from './support/webhooks';

jest.setTimeout(180_000);

/** Verifies one delivery with the 20-line Python verifier (the standard library alone). */
function pythonVerifies(secret: string, got: Got): boolean {
  const r = spawnSync('python3', [join(ROOT, 'test/fixtures/webhook-receiver/verify.py')], {
    input: JSON.stringify({
      secret,
      id: got.id,
      timestamp: got.timestamp,
      signature: got.signature,
      body: got.body,
    }),
    encoding: 'utf8',
  });
  if (r.error)
    throw new Error(
      `python3 could not run (${r.error.message}): bash scripts/services.sh installs it`,
    );
  return r.status === 0 && r.stdout.trim() === 'verified';
}

/** README's Python verifier (section "Hear back: webhooks"), run as written on one delivery. */
function readmePythonVerifies(secret: string, got: Got): boolean {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Hear back: webhooks'));
  const code = /```python\n([\s\S]*?)```/.exec(section)?.[1];
  if (!code) throw new Error('README.md has no Python verifier under "Hear back: webhooks"');
  const harness = `${code}
import json, sys
d = json.load(sys.stdin)
headers = {"webhook-id": d["id"], "webhook-timestamp": d["timestamp"], "webhook-signature": d["signature"]}
print("verified" if verify(d["secret"], headers, d["body"]) else "refused")
`;
  const r = spawnSync('python3', ['-c', harness], {
    input: JSON.stringify({ secret, ...got }),
    encoding: 'utf8',
  });
  if (r.error) throw new Error(`python3 could not run (${r.error.message})`);
  return r.stdout.trim() === 'verified';
}

describe('webhooks', () => {
  let backend: Backend;
  let dir: string;
  let scheduler: RunningProcess;
  let receiver: Receiver;
  let api: Api;
  const procs: RunningProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-webhooks-'));
    backend = embeddedBackend();
    receiver = await Receiver.start();
    procs.push(receiver.proc);
    scheduler = await startScheduler(backend, {
      BATON_INSTANCE_ID: 'webhooks-1',
      BATON_WEBHOOK_ALLOW: 'localhost',
      BATON_WEBHOOK_RETRY_SCHEDULE: '300ms,600ms,1200ms',
      BATON_WEBHOOK_RETRY_FOR: '4s',
      BATON_WEBHOOK_TIMEOUT: '1s',
      BATON_WEBHOOK_DISABLE_AFTER: '6s',
      BATON_WEBHOOK_POLL: '100ms',
    });
    procs.push(scheduler);
    procs.push(await startTemplateWorker('webhooks-w1', scheduler.url, join(dir, 'runs.jsonl')));
    api = new Api(scheduler.url);
    await api.waitForWorkers(1);
  });

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A subscription to `events` at the receiver's hook `name`; its secret is given to the receiver. */
  async function subscribe(
    name: string,
    events: string[],
    extra: Record<string, unknown> = {},
  ): Promise<{ webhook_id: string; secret: string }> {
    const res = await api.call<{ webhook_id: string; secret: string }>('POST', '/v1/webhooks', {
      url: receiver.hook(name),
      events,
      ...extra,
    });
    expect(res.status).toBe(201);
    expect(res.data.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await receiver.control('secret', { name, secrets: [res.data.secret] });
    return res.data;
  }

  async function deliveries(webhookId: string): Promise<Record<string, unknown>[]> {
    const r = await api.call<Record<string, unknown>[]>(
      'GET',
      `/v1/webhooks/${webhookId}/deliveries?limit=500`,
    );
    expect(r.status).toBe(200);
    return r.data;
  }

  it('fires each task event with a body that verifies, in status order per task', async () => {
    const hook = await subscribe('all', [
      'task.created',
      'task.status_changed',
      'task.succeeded',
      'task.failed',
      'task.finished',
      'task.timed_out',
    ]);
    const ok = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'hooked ok' },
      params: { n: 1 },
    });
    const failed = await api.create({
      create_info: { task_type: 'demo.flaky', task_name: 'hooked failure' },
      process_arg: { max_retry: 0 },
      params: { fail_times: 5 },
    });
    const late = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'hooked deadline' },
      process_arg: { deadline_second: 1, max_retry: 0 },
      params: { seconds: 20 },
    });
    for (const id of [ok, failed, late]) await api.until(id, 'FINISH', 60_000);

    // As a receiver reads them: once per message (webhook-id), since a delivery whose answer
    // came after the sender's timeout on a loaded box is delivered again, as documented.
    const typesOf = async (id: string): Promise<string[]> => {
      const seen = new Set<string>();
      return (await receiver.got('all'))
        .filter((g) => g.task_id === id && !seen.has(g.id) && seen.add(g.id))
        .map((g) => g.type);
    };
    const expected = async (id: string): Promise<string[]> => {
      // Every move, as the lifecycle log has it: created first, then one status_changed per move,
      // the outcome's events with the move to FINISH.
      const moves = await api.sequence(id);
      const out = ['task.created'];
      for (const s of moves) {
        out.push('task.status_changed');
        if (s === 'FAIL' && id === late) out.push('task.timed_out');
        if (s === 'FINISH') out.push(id === ok ? 'task.succeeded' : 'task.failed', 'task.finished');
      }
      return out;
    };
    let events = 0;
    for (const id of [ok, failed, late]) {
      const want = await expected(id);
      events += want.length;
      // Waits for all of them; a diff of what came shows when they do not all come.
      await eventually(
        async () => ((await typesOf(id)).length >= want.length ? true : undefined),
        30_000,
        `the events of ${id}`,
      ).catch(() => undefined);
      expect({ id, types: await typesOf(id) }).toEqual({ id, types: want });
    }
    const got = (await receiver.got('all')).filter((g) => [ok, failed, late].includes(g.task_id!));
    // Verified in the receiver's process by the standardwebhooks library.
    expect(got.filter((g) => !g.verified).map((g) => g.why)).toEqual([]);
    // And by 20 lines of Python, for interoperability.
    for (const g of got.slice(0, 5)) expect(pythonVerifies(hook.secret, g)).toBe(true);
    // README's snippet too; and neither accepts a body that was changed.
    expect(readmePythonVerifies(hook.secret, got[0])).toBe(true);
    const forged = { ...got[0], body: got[0].body.replace('"task_status"', '"task_statuz"') };
    expect(pythonVerifies(hook.secret, forged)).toBe(false);
    expect(readmePythonVerifies(hook.secret, forged)).toBe(false);
    // The body: {type, timestamp, data}, data the task as GET /v1/tasks/{id} has it.
    const final = got.find((g) => g.task_id === ok && g.type === 'task.succeeded')!;
    const body = JSON.parse(final.body) as Record<string, Record<string, unknown>>;
    const task = await api.task(ok);
    expect(body.type).toBe('task.succeeded');
    expect(new Date(body.timestamp as unknown as string).toISOString()).toBe(body.timestamp);
    expect(body.data).toMatchObject({
      task_id: ok,
      task_status: 'FINISH',
      outcome: 'SUCCESS',
      result: task.result,
    });
    expect(body.change).toMatchObject({ to_status: 'FINISH' });
    // A webhook-id is a message's: each event a different one. Delivery is at least once (a try
    // whose answer came too late on a busy box is sent again): a message sent twice has one id and
    // one body.
    const bodies = new Map<string, string>();
    for (const g of got) {
      expect(bodies.get(g.id) ?? g.body).toBe(g.body);
      bodies.set(g.id, g.body);
    }
    expect(bodies.size).toBe(events);
    // The delivery log holds each attempt with its answer.
    const log = await deliveries(hook.webhook_id);
    const one = log.find((d) => d.message_id === final.id)!;
    expect(one).toMatchObject({ status: 'delivered', attempts: 1, event_type: 'task.succeeded' });
    expect((one.attempt_log as Record<string, unknown>[])[0]).toMatchObject({
      attempt: 1,
      status_code: 200,
      response: '{"ok":true}',
      error: null,
      sent_by: 'webhooks-1',
    });
    // Per task too.
    const perTask = await api.call<Record<string, unknown>[]>('GET', `/v1/tasks/${ok}/deliveries`);
    expect(perTask.data.map((d) => d.message_id)).toContain(final.id);
    await api.call('DELETE', `/v1/webhooks/${hook.webhook_id}`);
  });

  it('calls a callback_url once, on the final outcome, signed with the tenant secret', async () => {
    const secret = await api.call<{ tenant: string; secret: string }>(
      'POST',
      '/v1/webhooks/callback-secret?tenant=default',
    );
    expect(secret.status).toBe(200);
    await receiver.control('secret', { name: 'cb', secrets: [secret.data.secret] });
    const id = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'with a callback' },
      params: { n: 2 },
      callback_url: receiver.hook('cb'),
    });
    await api.until(id);
    const got = await eventually(
      async () => {
        const list = (await receiver.got('cb')).filter((g) => g.task_id === id);
        return list.length > 0 ? list : undefined;
      },
      30_000,
      'the callback',
    );
    await holds(
      async () => (await receiver.got('cb')).filter((g) => g.task_id === id).length === 1,
      1000,
      'one callback, nothing more',
    );
    expect(got[0]).toMatchObject({ type: 'task.finished', task_status: 'FINISH', verified: true });
    expect(pythonVerifies(secret.data.secret, got[0])).toBe(true);
  });

  it('retries on the schedule, logs every attempt, gives up, and redelivers with the same id', async () => {
    const hook = await subscribe('flaky', ['task.finished']);
    await receiver.control('mode', { name: 'flaky', mode: 500 });
    const id = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'to a failing receiver' },
    });
    await api.until(id);
    const given = await eventually(
      async () => {
        const [d] = await deliveries(hook.webhook_id);
        return d?.status === 'failed' ? d : undefined;
      },
      30_000,
      'the message given up',
    );
    const log = given.attempt_log as { at: string; status_code: number }[];
    // 300 ms, 600 ms, 1,200 ms, then 1,200 ms again until 4 s: 4 to 6 attempts (±20% jitter).
    expect(log.length).toBeGreaterThanOrEqual(4);
    expect(log.every((a) => a.status_code === 500)).toBe(true);
    const gaps = log.slice(1).map((a, i) => Date.parse(a.at) - Date.parse(log[i].at));
    expect(gaps[0]).toBeGreaterThanOrEqual(240);
    expect(gaps[1]).toBeGreaterThanOrEqual(480);
    expect(gaps[2]).toBeGreaterThanOrEqual(960);
    const got = (await receiver.got('flaky')).filter((g) => g.task_id === id);
    expect(new Set(got.map((g) => g.id)).size).toBe(1); // one webhook-id across the retries

    // The receiver is fixed: everything given up since the task started is sent again.
    await receiver.control('mode', { name: 'flaky', mode: 'ok' });
    const since = new Date(Date.now() - 60_000).toISOString();
    const again = await api.call<{ redelivered: number }>(
      'POST',
      `/v1/webhooks/${hook.webhook_id}/redeliver`,
      { since },
    );
    expect(again).toMatchObject({ status: 202, data: { redelivered: 1 } });
    await eventually(
      async () => {
        const [d] = await deliveries(hook.webhook_id);
        return d?.status === 'delivered' ? d : undefined;
      },
      30_000,
      'the redelivery',
    );
    const after = (await receiver.got('flaky')).filter((g) => g.task_id === id);
    expect(after[after.length - 1]).toMatchObject({ id: got[0].id, answered: 'ok' });
    await api.call('DELETE', `/v1/webhooks/${hook.webhook_id}`);
  });

  it('disables a subscription answered 410, and times out a receiver that hangs', async () => {
    const gone = await subscribe('gone', ['task.finished']);
    await receiver.control('mode', { name: 'gone', mode: 410 });
    const hang = await subscribe('hang', ['task.finished']);
    await receiver.control('mode', { name: 'hang', mode: 'hang' });
    const id = await api.create({ create_info: { task_type: 'demo.echo', task_name: 'x' } });
    await api.until(id);
    const disabled = await eventually(
      async () => {
        const r = await api.call<Record<string, unknown>>('GET', `/v1/webhooks/${gone.webhook_id}`);
        return r.data.enabled === false ? r.data : undefined;
      },
      30_000,
      'the 410 subscription disabled',
    );
    expect(disabled.disabled_reason).toMatch(/410/);
    const hung = await eventually(
      async () => {
        const [d] = await deliveries(hang.webhook_id);
        return d && (d.attempt_log as unknown[]).length > 0 ? d : undefined;
      },
      30_000,
      'an attempt at the hanging receiver',
    );
    const first = (hung.attempt_log as Record<string, unknown>[])[0];
    expect(first.status_code).toBeNull();
    expect(String(first.error)).toMatch(/within 1000 ms|timeout/i);
    expect(Number(first.latency_ms)).toBeGreaterThanOrEqual(900);
    await api.call('DELETE', `/v1/webhooks/${gone.webhook_id}`);
    await api.call('DELETE', `/v1/webhooks/${hang.webhook_id}`);
  });

  it('disables a subscription whose deliveries all failed for BATON_WEBHOOK_DISABLE_AFTER', async () => {
    const hook = await subscribe('dead', ['task.finished']);
    await receiver.control('mode', { name: 'dead', mode: 503 });
    // A ping a second (the poll's pace) keeps attempts coming (each message alone gives up after 4 s).
    const disabled = await eventually(
      async () => {
        await api.call('POST', `/v1/webhooks/${hook.webhook_id}/test`);
        const r = await api.call<Record<string, unknown>>('GET', `/v1/webhooks/${hook.webhook_id}`);
        return r.data.enabled === false ? r.data : undefined;
      },
      60_000,
      'the failing subscription disabled',
      1000,
    );
    expect(disabled.disabled_reason).toMatch(/every delivery failed/);
    expect(Date.parse(String(disabled.failing_since))).toBeLessThan(Date.now() - 5000);
    // Enabled again: the streak starts over, and a working receiver gets its messages.
    await receiver.control('mode', { name: 'dead', mode: 'ok' });
    const again = await api.call<Record<string, unknown>>(
      'PATCH',
      `/v1/webhooks/${hook.webhook_id}`,
      {
        enabled: true,
      },
    );
    expect(again.data).toMatchObject({ enabled: true, disabled_reason: null, failing_since: null });
    const ping = await api.call<{ message_id: string }>(
      'POST',
      `/v1/webhooks/${hook.webhook_id}/test`,
    );
    await eventually(
      async () =>
        (await receiver.got('dead')).some(
          (g) => g.id === ping.data.message_id && g.answered === 'ok',
        )
          ? true
          : undefined,
      30_000,
      'a delivery after enabling',
    );
    await api.call('DELETE', `/v1/webhooks/${hook.webhook_id}`);
  });

  it('tells when a worker turns unhealthy, once', async () => {
    const hook = await subscribe('workers', ['worker.unhealthy']);
    const doomed = await startTemplateWorker(
      'webhooks-doomed',
      scheduler.url,
      join(dir, 'd.jsonl'),
    );
    procs.push(doomed);
    await api.waitForWorkers(2);
    await doomed.kill9(); // no more heartbeats: stale after BATON_WORKER_STALE_MS (3 s)
    const [got] = await eventually(
      async () => {
        const list = (await receiver.got('workers')).filter((g) => g.type === 'worker.unhealthy');
        return list.length > 0 ? list : undefined;
      },
      30_000,
      'worker.unhealthy',
    );
    expect(got.verified).toBe(true);
    const body = JSON.parse(got.body) as { data: Record<string, unknown> };
    expect(body.data).toMatchObject({ worker_id: 'webhooks-doomed', health: 'stale' });
    await holds(
      async () =>
        (await receiver.got('workers')).filter((g) => g.type === 'worker.unhealthy').length === 1,
      2000,
      'still unhealthy: told once',
    );
    await api.call('DELETE', `/v1/webhooks/${hook.webhook_id}`);
  });

  it('sends a test ping', async () => {
    const hook = await subscribe('ping', ['task.finished']);
    const ping = await api.call<Record<string, unknown>>(
      'POST',
      `/v1/webhooks/${hook.webhook_id}/test`,
    );
    expect(ping).toMatchObject({ status: 202, data: { event_type: 'webhook.test' } });
    const got = await eventually(
      async () => {
        const [g] = await receiver.got('ping');
        return g;
      },
      30_000,
      'the ping',
    );
    expect(got).toMatchObject({ id: ping.data.message_id, type: 'webhook.test', verified: true });
    await api.call('DELETE', `/v1/webhooks/${hook.webhook_id}`);
  });

  it('refuses URLs that reach internal addresses, unless allowed', async () => {
    const own = hostname();
    const addresses = await lookup(own, { all: true });
    // The machine's own name resolves to one of its addresses: loopback or private.
    expect(addresses.some((a) => internalRange(a.address) !== undefined)).toBe(true);
    const refused = [
      'http://127.0.0.1:9/x',
      'http://[::1]:9/x',
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/x',
      `http://${own}:9/x`,
      'file:///etc/passwd',
      'gopher://localhost:70/x',
    ];
    for (const url of refused) {
      const r = await api.call('POST', '/v1/webhooks', { url, events: ['task.finished'] });
      expect({ url, status: r.status, code: r.code }).toEqual({ url, status: 400, code: 40000 });
      const task = await api.call('POST', '/v1/tasks', {
        create_info: { task_type: 'demo.echo', task_name: 'x' },
        callback_url: url,
      });
      expect({ url, status: task.status }).toEqual({ url, status: 400 });
    }
    // Allowed: the host the allow-list names.
    const fine = await api.call<{ webhook_id: string }>('POST', '/v1/webhooks', {
      url: receiver.hook('fine'),
      events: ['task.finished'],
    });
    expect(fine.status).toBe(201);
    await api.call('DELETE', `/v1/webhooks/${fine.data.webhook_id}`);
  });
});
