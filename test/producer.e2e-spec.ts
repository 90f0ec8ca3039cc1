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
import { RunningProcess, eventually, holds, steady } from './support/processes';

jest.setTimeout(120_000);

interface FireRow {
  task_id: string;
  task_status: string;
  outcome: string | null;
  repetition: string;
  idempotency_key: string;
  labels: Record<string, string>;
}

/** Every task a timer created, by its fire time (ms), from the list API. */
async function fires(api: Api, timerId: string): Promise<Map<number, FireRow>> {
  const out = new Map<number, FireRow>();
  let cursor: string | null = null;
  do {
    const q: string = `/v1/tasks?label=timer_id:${timerId}&limit=200${cursor ? `&cursor=${cursor}` : ''}`;
    const page = await api.call<{ items: FireRow[]; next_cursor: string | null }>('GET', q);
    for (const t of page.data.items) {
      const slot = Number(t.idempotency_key.split(':')[2]);
      expect(out.has(slot)).toBe(false);
      out.set(slot, t);
    }
    cursor = page.data.next_cursor;
  } while (cursor);
  return out;
}

// On the embedded defaults only: MariaDB, Redis and the other lock backends are proven by the
// store, queue and lock conformance suites and the scheduler-flows and crash e2e files.
describe.each([['sqlite + memory + local locks', async () => embeddedBackend()]])(
  'timers on %s',
  (_name, makeBackend: () => Promise<Backend>) => {
    let backend: Backend;
    let dir: string;
    let scheduler: RunningProcess;
    let worker: RunningProcess;
    let api: Api;

    const start = async () => {
      scheduler = await startScheduler(backend, {
        BATON_INSTANCE_ID: 'timers-1',
        BATON_WORKER_STALE_MS: '600000',
        BATON_PRODUCER_LEASE_MS: '1500',
      });
      api = new Api(scheduler.url);
    };

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'baton-timers-'));
      backend = await makeBackend();
      await start();
      worker = await startTemplateWorker('timers-w1', scheduler.url, join(dir, 'w1.jsonl'));
      await api.waitForWorkers(1);
      await eventually(
        async () =>
          (await api.call<{ active: boolean }>('GET', '/v1/producer')).data.active
            ? true
            : undefined,
        10_000,
        'the producer leading',
      );
    });

    afterAll(async () => {
      await worker?.stop();
      await scheduler?.stop();
      await backend?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    const echo = { create_info: { task_type: 'demo.echo', task_name: 'tick' }, params: { x: 1 } };

    it('refuses a bad definition with a 400 envelope and writes nothing', async () => {
      const bad = [
        { name: 'x', schedule: { kind: 'cron', cron: 'not a cron' }, task: echo },
        {
          name: 'x',
          schedule: { kind: 'cron', cron: '* * * * * *', time_zone: 'Mars/Base' },
          task: echo,
        },
        { name: 'x', schedule: { kind: 'interval' }, task: echo },
        { name: 'x', schedule: { kind: 'once', at: 'tomorrow' }, task: echo },
        {
          name: 'x',
          schedule: { kind: 'once', at: new Date().toISOString(), cron: '* * * * *' },
          task: echo,
        },
        {
          name: 'x',
          schedule: { kind: 'interval', every_ms: 1000 },
          task: { ...echo, idempotency_key: 'k' },
        },
        {
          name: 'x',
          schedule: { kind: 'interval', every_ms: 1000 },
          task: { create_info: { task_type: 'no.such', task_name: 'n' } },
        },
        {
          name: 'x',
          schedule: { kind: 'interval', every_ms: 1000 },
          task: echo,
          misfire_policy: 'sometimes',
        },
        { name: 'x', schedule: { kind: 'interval', every_ms: 1000 }, task: echo, surprise: 1 },
        {
          name: 'x',
          schedule: { kind: 'once', at: new Date(Date.now() + 60_000).toISOString() },
          end_at: new Date(Date.now() + 30_000).toISOString(),
          task: echo,
        },
      ];
      for (const body of bad) {
        const res = await api.call('POST', '/v1/timers', body);
        expect(res.status).toBe(400);
        expect(res.code).toBe(40000);
        expect(res.message.length).toBeGreaterThan(0);
      }
      expect((await api.call<unknown[]>('GET', '/v1/timers')).data).toEqual([]);
      expect((await api.call('GET', '/v1/timers/nope')).status).toBe(404);
      // A timer's tenant is part of its fire key: it cannot change.
      const made = await api.call<{ timer_id: string; tenant: string }>('POST', '/v1/timers', {
        name: 'tenant a',
        schedule: { kind: 'interval', every_ms: 60_000 },
        task: { ...echo, tenant: 'team-a' },
      });
      expect(made.data.tenant).toBe('team-a');
      const moved = await api.call('PATCH', `/v1/timers/${made.data.timer_id}`, {
        task: { ...echo, tenant: 'team-b' },
      });
      expect(moved.status).toBe(400);
      const kept = await api.call<{ tenant: string; task: { tenant: string } }>(
        'PATCH',
        `/v1/timers/${made.data.timer_id}`,
        { task: echo },
      );
      expect(kept.status).toBe(200);
      expect(kept.data.tenant).toBe('team-a');
      expect(kept.data.task.tenant).toBe('team-a');
      await api.call('DELETE', `/v1/timers/${made.data.timer_id}`);
    });

    it('fires an interval timer once per slot as timed tasks, and stops when disabled', async () => {
      const created = await api.call<{ timer_id: string; next_fire_at: string }>(
        'POST',
        '/v1/timers',
        {
          name: 'every 300 ms',
          schedule: { kind: 'interval', every_ms: 300 },
          task: echo,
        },
      );
      expect(created.status).toBe(201);
      const id = created.data.timer_id;
      await eventually(
        async () => ((await fires(api, id)).size >= 5 ? true : undefined),
        10_000,
        '5 fires',
      );
      const off = await api.call<{ enabled: boolean }>('PATCH', `/v1/timers/${id}`, {
        enabled: false,
      });
      expect(off.status).toBe(200);
      // A pass in flight when it was disabled finishes; then no more fires.
      const before = await steady(async () => (await fires(api, id)).size, 'the fires settling');
      await holds(
        async () => (await fires(api, id)).size === before,
        1000,
        'no fire when disabled',
      );
      const after = await fires(api, id);
      // Slots on the 300 ms grid, consecutive, each once; every fire a normal timed task that ran.
      const slots = [...after.keys()].sort((a, b) => a - b);
      for (let i = 1; i < slots.length; i++) expect(slots[i] - slots[i - 1]).toBe(300);
      for (const t of after.values()) {
        expect(t.repetition).toBe('timed');
        expect(t.labels.timer_id).toBe(id);
      }
      const first = after.get(slots[0]) as FireRow;
      const done = await api.until(first.task_id, 'FINISH');
      expect(done.outcome).toBe('SUCCESS');
      const timer = (
        await api.call<{ fire_count: number; enabled: boolean }>('GET', `/v1/timers/${id}`)
      ).data;
      expect(timer.enabled).toBe(false);
      expect(timer.fire_count).toBe(after.size);
    });

    it('fires a one-shot at its instant (schedule_task) and then never again', async () => {
      const at = Date.now() + 700;
      const created = await api.call<{ timer_id: string }>('POST', '/v1/timers', {
        name: 'once',
        schedule: { kind: 'once', at: new Date(at).toISOString() },
        task: echo,
      });
      const id = created.data.timer_id;
      const got = await eventually(
        async () => {
          const f = await fires(api, id);
          return f.size === 1 ? f : undefined;
        },
        10_000,
        'the one-shot fire',
      );
      expect([...got.keys()]).toEqual([at]);
      // Written ahead of its instant (BATON_PRODUCER_LEAD_MS), it starts at the instant, not before.
      const task = await api.until([...got.values()][0].task_id, 'FINISH');
      expect(task.start_time).toBe(new Date(at).toISOString());
      expect(Date.parse(task.started_at as string)).toBeGreaterThanOrEqual(at);
      // It waited in INIT, touched by nothing until its instant.
      expect(await api.sequence(task.task_id as string)).toEqual([
        'INIT',
        'CREATE',
        'RUNNING',
        'SUCCESS',
        'FINISH',
      ]);
      await holds(async () => (await fires(api, id)).size === 1, 600, 'one fire only');
      expect(
        (await api.call<{ next_fire_at: string | null }>('GET', `/v1/timers/${id}`)).data
          .next_fire_at,
      ).toBeNull();
    });

    it('overlap policies: skip never overlaps, cancel_previous cancels, allow overlaps', async () => {
      const sleepy = (ms: number) => ({
        create_info: { task_type: 'demo.sleep', task_name: 'long' },
        params: { ms },
      });
      const mk = async (policy: string) =>
        (
          await api.call<{ timer_id: string }>('POST', '/v1/timers', {
            name: `overlap ${policy}`,
            schedule: { kind: 'interval', every_ms: 400 },
            task: sleepy(1500),
            overlap_policy: policy,
          })
        ).data.timer_id;
      const ids = {
        skip: await mk('skip'),
        cancel: await mk('cancel_previous'),
        allow: await mk('allow'),
      };
      const view = async (id: string) =>
        (await api.call<{ fire_count: number; skip_count: number }>('GET', `/v1/timers/${id}`))
          .data;
      // Long enough for each policy to show: skipped slots, three fires cancelling each other,
      // and more fires allowed than skipped.
      await eventually(
        async () => {
          const [s, a] = [await view(ids.skip), await view(ids.allow)];
          const cancels = (await fires(api, ids.cancel)).size;
          return s.skip_count > 0 && cancels >= 3 && a.fire_count >= s.fire_count + 2
            ? true
            : undefined;
        },
        30_000,
        'each overlap policy at work',
      );
      for (const id of Object.values(ids))
        await api.call('PATCH', `/v1/timers/${id}`, { enabled: false });

      // skip: slots were skipped, and no fire started before the previous one finished.
      const skip = await view(ids.skip);
      expect(skip.skip_count).toBeGreaterThan(0);
      const skipFires = [...(await fires(api, ids.skip)).values()];
      const spans = await Promise.all(
        skipFires.map(async (f) => {
          const t = await api.until(f.task_id, 'FINISH', 20_000);
          return {
            from: Date.parse(t.created_at as string),
            to: Date.parse(t.finished_at as string),
          };
        }),
      );
      spans.sort((a, b) => a.from - b.from);
      for (let i = 1; i < spans.length; i++)
        expect(spans[i].from).toBeGreaterThanOrEqual(spans[i - 1].to);

      // cancel_previous: every fire but the last was cancelled by the next one.
      const cancelFires = [...(await fires(api, ids.cancel)).entries()].sort(([a], [b]) => a - b);
      expect(cancelFires.length).toBeGreaterThanOrEqual(3);
      const cancelled = await Promise.all(
        cancelFires.slice(0, -1).map(async ([, f]) => {
          const t = await api.until(f.task_id, 'FINISH', 20_000);
          return { outcome: t.outcome, error: (t.error as { message?: string } | null)?.message };
        }),
      );
      for (const c of cancelled) {
        expect(c.outcome).toBe('CANCELLED');
        expect(c.error).toMatch(/cancel/i);
      }

      // allow: more fires than fit one after another, so some overlapped.
      const allow = await view(ids.allow);
      expect(allow.skip_count).toBe(0);
      expect(allow.fire_count).toBeGreaterThan(skip.fire_count);
    });
  },
);
