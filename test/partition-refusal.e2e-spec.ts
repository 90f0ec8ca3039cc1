import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TcpProxy } from '../libs/locks/test/fixtures/tcp-proxy';
import {
  ADMIN_KEY,
  Api,
  Backend,
  productionBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually, schedule } from './support/processes';

jest.setTimeout(300_000);

/** How long each partition lasts: well past any bound the scheduler keeps. */
const PARTITION_MS = 15_000;
/** An answer later than this has waited on the partition (the bound is about 2 s). */
const FAST_ENOUGH_MS = 10_000;

interface Answer {
  key: string;
  status: number;
  code: number;
  retryAfter: string | null;
  ms: number;
  sentAt: number;
}

const percentile = (xs: number[], p: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

/**
 * A partition between one scheduler of two and MariaDB, then Redis (a proxy that forwards
 * nothing and closes nothing), while creates keep coming to both: the cut-off instance answers
 * each create quickly, 503 (`50301`) with Retry-After once it has found the database silent,
 * goes unready naming the backend, warns once, and is ready again by itself once the partition
 * heals. With Redis silent it still takes creates (the database holds them; the queue is only a
 * fast path). Every create ends as exactly one task (a refused one is sent again to the other
 * instance with its Idempotency-Key), and every task finishes. Timings are printed; the test
 * holds them only to "not waiting out the partition" (a loaded box is slow, not wrong).
 */
describe('a partition between one scheduler and its backends', () => {
  let backend: Backend;
  const procs: RunningProcess[] = [];
  const proxies: TcpProxy[] = [];
  let dir: string;

  beforeAll(async () => {
    backend = await productionBackend();
    dir = mkdtempSync(join(tmpdir(), 'baton-refusal-'));
  });

  afterAll(async () => {
    await Promise.all(procs.splice(0).map((p) => p.kill9()));
    await Promise.all(proxies.splice(0).map((p) => p.close()));
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses fast while MariaDB is silent, takes creates while Redis is, and loses nothing', async () => {
    const mysql = await TcpProxy.start('127.0.0.1', 3306);
    const redis = await TcpProxy.start('127.0.0.1', 6379);
    proxies.push(mysql, redis);
    const cut = await startScheduler(backend, {
      BATON_INSTANCE_ID: 'cut-off',
      BATON_MYSQL_PORT: String(mysql.port),
      BATON_REDIS_PORT: String(redis.port),
    });
    procs.push(cut);
    const other = await startScheduler(backend, { BATON_INSTANCE_ID: 'other' });
    procs.push(other);
    procs.push(await startTemplateWorker('w1', `${other.url},${cut.url}`, join(dir, 'runs.jsonl')));
    const otherApi = new Api(other.url);
    await eventually(
      async () =>
        ((await otherApi.call<unknown[]>('GET', '/v1/workers')).data.length ?? 0) > 0
          ? true
          : undefined,
      30_000,
      'the worker registered',
    );
    const run = randomBytes(3).toString('hex');
    const body = (key: string): string =>
      JSON.stringify({
        create_info: { task_type: 'demo.echo', task_name: `partition ${key}` },
        labels: { run },
      });
    const create = async (url: string, key: string): Promise<Answer> => {
      const sent = schedule();
      try {
        const res = await fetch(`${url}/v1/tasks`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${ADMIN_KEY}`,
            'content-type': 'application/json',
            'idempotency-key': key,
          },
          body: body(key),
          signal: AbortSignal.timeout(60_000),
        });
        const json = (await res.json()) as { code: number };
        return {
          key,
          status: res.status,
          code: json.code,
          retryAfter: res.headers.get('retry-after'),
          ms: sent.elapsed(),
          sentAt: sent.startedAt,
        };
      } catch {
        return { key, status: 0, code: -1, retryAfter: null, ms: sent.elapsed(), sentAt: 0 };
      }
    };
    /** Creates to both instances, two at a time to each, until `stop` is set. */
    const keys: string[] = [];
    const load = (label: string) => {
      const state = { stop: false, cut: [] as Answer[], other: [] as Answer[] };
      let n = 0;
      const lane = async (url: string, into: Answer[]): Promise<void> => {
        while (!state.stop) {
          const key = `${run}-${label}-${n++}`;
          keys.push(key);
          into.push(await create(url, key));
          await schedule().after(100);
        }
      };
      const lanes = [0, 1].flatMap(() => [lane(cut.url, state.cut), lane(other.url, state.other)]);
      return { state, done: () => Promise.all(lanes) };
    };
    const readiness = async (url: string) => {
      const asked = schedule();
      const res = await fetch(`${url}/health/ready`, { signal: AbortSignal.timeout(60_000) });
      const json = (await res.json()) as { message: string };
      return { status: res.status, message: json.message, ms: asked.elapsed() };
    };

    // ---- MariaDB silent --------------------------------------------------------------------
    const warningsBefore = (
      cut.output().match(/"context":"BackendGate","msg":"the database did not answer/g) ?? []
    ).length;
    const db = load('db');
    await schedule().after(2000);
    const cutAt = schedule();
    mysql.blackhole();
    await schedule().after(PARTITION_MS / 2);
    const unready = await readiness(cut.url);
    await schedule().after(PARTITION_MS / 2);
    mysql.restore();
    const healed = schedule();
    let lastReady = '';
    await eventually(
      async () => {
        const r = await readiness(cut.url);
        lastReady = `${r.status} ${r.message}`;
        return r.status === 200 ? true : undefined;
      },
      60_000,
      'the cut-off scheduler ready again after MariaDB came back',
    ).catch((err: Error) => {
      const gate = cut
        .output()
        .split('\n')
        .filter((l) => /BackendGate|database/.test(l))
        .join('\n');
      throw new Error(
        `${err.message}; /health/ready said ${lastReady}; gate:\n${gate.slice(-3000)}`,
      );
    });
    const readyAgainMs = healed.elapsed();
    await schedule().after(2000);
    db.state.stop = true;
    await db.done();
    const during = db.state.cut.filter((a) => a.sentAt >= cutAt.startedAt);
    const refused = during.filter((a) => a.status === 503);
    const ms = during.map((a) => a.ms);
    console.log(
      `MariaDB silent ${PARTITION_MS} ms: the cut-off instance answered ${during.length} creates sent since (` +
        `${refused.length} x 503, ${during.filter((a) => a.status === 201).length} x 201), ` +
        `p50 ${percentile(ms, 50)} ms, p99 ${percentile(ms, 99)} ms, max ${Math.max(...ms)} ms; ` +
        `/health/ready 503 in ${unready.ms} ms (${unready.message}); ready again ${readyAgainMs} ms after the heal; ` +
        `the other instance: ${db.state.other.length} creates, p99 ${percentile(
          db.state.other.map((a) => a.ms),
          99,
        )} ms`,
    );
    expect(unready.status).toBe(503);
    expect(unready.message).toMatch(/database/);
    expect(refused.length).toBeGreaterThan(0);
    for (const a of refused) expect([a.code, a.retryAfter]).toEqual([50301, expect.any(String)]);
    // Nothing waited out the partition, and nothing else went wrong.
    expect(during.filter((a) => a.ms > FAST_ENOUGH_MS || ![201, 503].includes(a.status))).toEqual(
      [],
    );
    expect(db.state.other.filter((a) => a.status !== 201)).toEqual([]);
    const warnings = (
      cut.output().match(/"context":"BackendGate","msg":"the database did not answer/g) ?? []
    ).length;
    expect(warnings - warningsBefore).toBe(1);
    expect(cut.output()).toMatch(/the database answers again, after \d+\.\d s without it/);

    // ---- Redis silent ----------------------------------------------------------------------
    const q = load('queue');
    await schedule().after(1000);
    const queueCutAt = schedule();
    redis.blackhole();
    await schedule().after(PARTITION_MS / 2);
    const queueUnready = await readiness(cut.url);
    await schedule().after(PARTITION_MS / 2);
    redis.restore();
    await eventually(
      async () => ((await readiness(cut.url)).status === 200 ? true : undefined),
      60_000,
      'the cut-off scheduler ready again after Redis came back',
    );
    q.state.stop = true;
    await q.done();
    const queueDuring = q.state.cut.filter((a) => a.sentAt >= queueCutAt.startedAt);
    const qms = queueDuring.map((a) => a.ms);
    console.log(
      `Redis silent ${PARTITION_MS} ms: the cut-off instance answered ${queueDuring.length} creates sent since, ` +
        `${queueDuring.filter((a) => a.status === 201).length} x 201, p50 ${percentile(qms, 50)} ms, ` +
        `p99 ${percentile(qms, 99)} ms, max ${Math.max(...qms)} ms; /health/ready ${queueUnready.status} in ${queueUnready.ms} ms (${queueUnready.message})`,
    );
    expect([queueUnready.status, queueUnready.message]).toEqual([
      503,
      expect.stringMatching(/queue/),
    ]);
    expect(queueDuring.filter((a) => a.status !== 201 || a.ms > FAST_ENOUGH_MS)).toEqual([]);

    // ---- Nothing lost, nothing doubled -------------------------------------------------------
    // A create that was refused, or not answered, is sent again to the other instance with its
    // key: one task per key, whatever the first try did.
    const answered = new Map(
      [...db.state.cut, ...db.state.other, ...q.state.cut, ...q.state.other].map((a) => [a.key, a]),
    );
    for (const key of keys)
      if (answered.get(key)?.status !== 201) {
        const again = await create(other.url, key);
        expect([key, again.status]).toEqual([key, expect.any(Number)]);
        expect([200, 201]).toContain(again.status);
      }
    type Page = { items: { task_id: string; task_status: string }[]; next_cursor: string | null };
    const listAll = async (): Promise<Page['items']> => {
      const out: Page['items'] = [];
      let cursor: string | null = null;
      do {
        const page: Page = (
          await otherApi.call<Page>(
            'GET',
            `/v1/tasks?label=run:${run}&limit=500${cursor ? `&cursor=${cursor}` : ''}`,
          )
        ).data;
        out.push(...page.items);
        cursor = page.next_cursor;
      } while (cursor);
      return out;
    };
    const tasks = await eventually(
      async () => {
        const list = await listAll();
        return list.length >= keys.length && list.every((t) => t.task_status === 'FINISH')
          ? list
          : undefined;
      },
      180_000,
      `all ${keys.length} created tasks finishing`,
    );
    expect(tasks).toHaveLength(keys.length);
  });
});
