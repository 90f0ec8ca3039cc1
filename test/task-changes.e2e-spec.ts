import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AUTH,
  Api,
  Backend,
  embeddedBackend,
  productionBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually } from './support/processes';
import { SseStream, openStream } from './support/sse';

jest.setTimeout(240_000);

const echo = (name: string, tenant?: string) => ({
  create_info: { task_type: 'demo.echo', task_name: name },
  params: { n: 1 },
  ...(tenant ? { tenant } : {}),
});

/** The statuses a stream told of one task, in the order it told them. */
const movesOf = (s: SseStream, id: string): string[] =>
  s
    .tasks()
    .filter((t) => t.task_id === id)
    .map((t) => `${String(t.from)}>${String(t.to)}`);

/**
 * GET /v1/task-changes/stream: the task status changes of the lifecycle log, as server-sent
 * events, filtered by what the caller asked for and what its key may read, from any instance.
 */
describe('the live stream of task changes', () => {
  const procs: RunningProcess[] = [];
  const streams: SseStream[] = [];
  const backends: Backend[] = [];
  let dir: string;

  const open = async (
    url: string,
    key = AUTH.authorization,
    extra: Record<string, string> = {},
  ) => {
    const s = await openStream(url, { authorization: key, ...extra });
    streams.push(s);
    return s;
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'baton-task-changes-'));
  });

  afterAll(async () => {
    for (const s of streams) s.close();
    await Promise.all(procs.map((p) => p.stop()));
    await Promise.all(backends.map((b) => b.cleanup()));
    rmSync(dir, { recursive: true, force: true });
  });

  describe('one scheduler (embedded defaults)', () => {
    let api: Api;
    let base: string;

    beforeAll(async () => {
      const backend = embeddedBackend();
      backends.push(backend);
      const scheduler = await startScheduler(backend, { BATON_STREAM_POLL_MS: '100' });
      procs.push(scheduler);
      procs.push(await startTemplateWorker('changes-w1', scheduler.url, join(dir, 'runs.jsonl')));
      api = new Api(scheduler.url);
      base = `${scheduler.url}/v1/task-changes/stream`;
      await api.waitForWorkers(1);
    });

    it('tells each move of the tasks it was asked about, in order, and nothing else', async () => {
      const mine = await open(`${base}?task_type=demo.echo`);
      expect(mine.status).toBe(200);
      const other = await api.create({
        create_info: { task_type: 'demo.sleep', task_name: 'not-watched' },
        params: { ms: 10 },
      });
      const id = await api.create(echo('watched'));
      await api.until(id, 'FINISH', 60_000);
      await api.until(other, 'FINISH', 60_000);
      const moves = await eventually(
        async () => {
          const m = movesOf(mine, id);
          return m.at(-1)?.endsWith('>FINISH') ? m : undefined;
        },
        30_000,
        'the stream telling of the move to FINISH',
      );
      // Exactly what the lifecycle log holds, in its order.
      const events = await api.events(id);
      expect(moves).toEqual(events.map((e) => `${String(e.from)}>${e.to}`));
      const last = mine
        .tasks()
        .filter((t) => t.task_id === id)
        .at(-1)!;
      expect(last).toMatchObject({ task_type: 'demo.echo', tenant: 'default', outcome: 'SUCCESS' });
      expect(mine.tasks().some((t) => t.task_id === other)).toBe(false);
    });

    it('filters by task id, and ends after max_seconds', async () => {
      // Created paused: their moves (the cancels) come after the stream is open, however fast
      // or slow the box.
      const held = { process_arg: { task_status: 'PAUSE' } };
      const a = await api.create({ ...echo('by-id-a'), ...held });
      const b = await api.create({ ...echo('by-id-b'), ...held });
      const s = await open(`${base}?task_id=${a}&max_seconds=3`);
      await api.call('POST', `/v1/tasks/${a}/cancel`, {});
      await api.call('POST', `/v1/tasks/${b}/cancel`, {});
      await api.until(a, 'FINISH', 60_000);
      await api.until(b, 'FINISH', 60_000);
      await s.ended; // within max_seconds, or the test's own timeout fails it
      expect(movesOf(s, a).length).toBeGreaterThan(0);
      expect(s.tasks().every((t) => t.task_id === a)).toBe(true);
    });

    it('replays what a client missed when it comes back with Last-Event-ID', async () => {
      const first = await open(`${base}?task_type=demo.echo`);
      const mark = await eventually(async () => first.lastId(), 10_000, 'a first id');
      first.close();
      const missed = await api.create(echo('while-away'));
      await api.until(missed, 'FINISH', 60_000);
      const again = await open(`${base}?task_type=demo.echo`, AUTH.authorization, {
        'last-event-id': mark,
      });
      await eventually(
        async () => (movesOf(again, missed).at(-1)?.endsWith('>FINISH') ? true : undefined),
        30_000,
        'the replay of the missed task',
      );
      expect(movesOf(again, missed)[0]).toBe('null>INIT');
    });

    it("gives a tenant's key its own tenant's changes only", async () => {
      const key = async (tenant: string): Promise<string> => {
        const made = await api.call<{ key: string }>('POST', '/v1/api-keys', {
          name: `changes-${tenant}`,
          role: 'viewer',
          tenant,
        });
        expect(made.status).toBe(201);
        return `Bearer ${made.data.key}`;
      };
      const alpha = await key('alpha');
      const seenByAlpha = await open(base, alpha);
      const refused = await open(`${base}?tenant=beta`, alpha);
      expect(refused.status).toBe(403);
      expect(refused.refusal?.code).toEqual(expect.any(Number));
      const theirs = await api.create(echo('beta-task', 'beta'));
      const ours = await api.create(echo('alpha-task', 'alpha'));
      await api.until(theirs, 'FINISH', 60_000);
      await api.until(ours, 'FINISH', 60_000);
      await eventually(
        async () => (movesOf(seenByAlpha, ours).at(-1)?.endsWith('>FINISH') ? true : undefined),
        30_000,
        "alpha's task on alpha's stream",
      );
      expect(seenByAlpha.tasks().every((t) => t.tenant === 'alpha')).toBe(true);
    });

    it('refuses bad filters with the envelope, and no key at all', async () => {
      for (const q of ['task_id=has%20space', 'max_seconds=0', 'task_type=Bad!', 'tenant=%20']) {
        const s = await open(`${base}?${q}`);
        expect({ q, status: s.status, code: s.refusal?.code }).toEqual({
          q,
          status: 400,
          code: expect.any(Number),
        });
      }
      const anonymous = await openStream(base, {});
      expect(anonymous.status).toBe(401);
    });
  });

  it('tells changes made through another instance (MariaDB, two schedulers)', async () => {
    const backend = await productionBackend();
    backends.push(backend);
    const a = await startScheduler(backend, { BATON_INSTANCE_ID: 'changes-a' });
    procs.push(a);
    const b = await startScheduler(backend, {
      BATON_INSTANCE_ID: 'changes-b',
      BATON_STREAM_POLL_MS: '100',
    });
    procs.push(b);
    procs.push(await startTemplateWorker('changes-w2', a.url, join(dir, 'runs-2.jsonl')));
    const viaA = new Api(a.url);
    await viaA.waitForWorkers(1);
    const onB = await open(`${b.url}/v1/task-changes/stream?task_type=demo.echo`);
    const ids = await Promise.all([1, 2, 3, 4, 5].map((i) => viaA.create(echo(`across-${i}`))));
    for (const id of ids) await viaA.until(id, 'FINISH', 60_000);
    for (const id of ids) {
      const want = (await viaA.events(id)).map((e) => `${String(e.from)}>${e.to}`);
      await eventually(
        async () => (movesOf(onB, id).length >= want.length ? true : undefined),
        30_000,
        `every move of ${id} on the other instance's stream`,
      );
      // Each move once, in order (a late one may come after later ones of other tasks only).
      expect(movesOf(onB, id)).toEqual(want);
    }
  });
});
