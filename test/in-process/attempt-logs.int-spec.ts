import { request } from 'undici';
import { authHeaders } from '@baton/task-contract';
import { Api, SECRET } from '../support/baton';
import { InProcessBaton, startInProcess } from '../support/in-process';
import { Waits, manualTime } from '../support/waits';

/** Waits for end states, in clock time. */
const SETTLE_MS = 120_000;

interface Line {
  seq: number;
  at: string;
  level: string;
  message: string;
  fields: Record<string, unknown> | null;
}
interface Page {
  task_id: string;
  attempt: number;
  items: Line[];
  next_after: number;
  has_more: boolean;
  dropped: number;
}

/**
 * What workers log per attempt, through the scheduler and template workers in one process on a
 * ManualClock: the worker library ships what handlers log (`ctx.log`), the scheduler keeps it
 * per attempt within its caps, and people read it a page at a time or as a stream.
 */
describe('worker logs per attempt', () => {
  let baton: InProcessBaton;
  let waits: Waits;
  let api: Api;

  const page = async (id: string, attempt: number, query = ''): Promise<Page> => {
    const res = await api.call<Page>('GET', `/v1/tasks/${id}/attempts/${attempt}/logs${query}`);
    expect([res.status, res.code]).toEqual([200, 0]);
    return res.data;
  };
  const finished = (id: string) =>
    waits.eventually(
      async () => {
        const t = await api.task(id);
        return t.task_status === 'FINISH' ? t : undefined;
      },
      SETTLE_MS,
      `task ${id} finished`,
    );
  /** A worker's signed call, as the worker library makes it, on the scheduler's clock. */
  const signed = async (path: string, fence: number, body: unknown) => {
    const text = JSON.stringify(body);
    const res = await request(`${api.base}${path}`, {
      method: 'PUT',
      headers: {
        'content-type': 'application/json',
        'x-baton-fence': String(fence),
        ...authHeaders(
          { mode: 'hmac', secret: SECRET },
          { method: 'PUT', pathWithQuery: path, fence: String(fence), body: text },
          baton.clock.now(),
        ),
      },
      body: text,
    });
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    baton = await startInProcess({ BATON_ATTEMPT_LOG_MAX_LINES: '20' });
    waits = manualTime(baton.clock);
    api = baton.api;
    await baton.addWorker('logs-worker');
  });

  afterAll(async () => {
    await baton?.stop();
  });

  it('keeps what a run logs with its attempt, in order, and filters it by level and words', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'logs its ticks' },
      params: { seconds: 2, tick_ms: 500 },
    });
    await finished(id);
    const lines = await waits.eventually(
      async () => {
        const p = await page(id, 1);
        return p.items.some((l) => l.message.startsWith('done')) ? p.items : undefined;
      },
      SETTLE_MS,
      'the last line kept',
    );
    expect(lines.map((l) => [l.seq, l.level, l.message])).toEqual([
      [0, 'info', 'sleeping 2 s in ticks of 500 ms'],
      [1, 'info', 'tick 1: slept 500 of 2000 ms'],
      [2, 'info', 'tick 2: slept 1000 of 2000 ms'],
      [3, 'info', 'tick 3: slept 1500 of 2000 ms'],
      [4, 'info', 'tick 4: slept 2000 of 2000 ms'],
      [5, 'info', 'done: slept 2000 ms in 4 tick(s)'],
    ]);
    expect(lines[0].fields).toEqual({ attempt: 1 });
    expect((await page(id, 1, '?level=warn')).items).toEqual([]);
    expect((await page(id, 1, '?q=TICK%203')).items.map((l) => l.seq)).toEqual([3]);
    const second = await page(id, 1, '?after=3&limit=1');
    expect([second.items.map((l) => l.seq), second.next_after, second.has_more]).toEqual([
      [4],
      4,
      true,
    ]);
  });

  it('keeps each attempt’s lines apart: a failed attempt’s error, the retry’s success', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.flaky', task_name: 'fails once' },
      params: { fail_times: 1 },
      process_arg: { max_retry: 1 },
    });
    const done = await finished(id);
    expect(done.outcome).toBe('SUCCESS');
    const first = await waits.eventually(
      async () => ((await page(id, 1)).items.length > 0 ? page(id, 1) : undefined),
      SETTLE_MS,
      'attempt 1 logged',
    );
    expect(first.items.map((l) => [l.level, l.message])).toEqual([
      ['error', 'attempt 1 fails: this type fails its first 1'],
    ]);
    const retry = await waits.eventually(
      async () => ((await page(id, 2)).items.length > 0 ? page(id, 2) : undefined),
      SETTLE_MS,
      'attempt 2 logged',
    );
    expect(retry.items.map((l) => [l.seq, l.message])).toEqual([
      [0, 'attempt 2 succeeds (after 1 failure(s))'],
    ]);
  });

  it('keeps an attempt within its cap, saying how many of its oldest lines went', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'logs 30 lines' },
      params: { log_lines: 30 },
    });
    await finished(id);
    const kept = await waits.eventually(
      async () => {
        const p = await page(id, 1);
        return p.dropped === 10 ? p : undefined;
      },
      SETTLE_MS,
      'the oldest ten dropped',
    );
    expect(kept.items.map((l) => l.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 10));
  });

  it('keeps a resend once, and refuses lines of an attempt the task did not have or a fence before it', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'signed logs' },
    });
    const t = await finished(id);
    const fence = Number(t.fence);
    const batch = {
      attempt: 1,
      lines: [
        { seq: 100, at: new Date(baton.clock.now()).toISOString(), level: 'info', message: 'a' },
        { seq: 101, at: new Date(baton.clock.now()).toISOString(), level: 'warn', message: 'b' },
      ],
    };
    const path = `/v1/tasks/${id}/logs`;
    const first = await signed(path, fence, batch);
    expect(first).toMatchObject({
      status: 200,
      body: { code: 0, data: { task_id: id, accepted: 2, duplicates: 0 } },
    });
    const again = await signed(path, fence, batch);
    expect(again.body).toMatchObject({ data: { accepted: 0, duplicates: 2 } });
    expect((await page(id, 1, '?after=99')).items.map((l) => l.message)).toEqual(['a', 'b']);
    // An attempt it never had; a fence from before its attempt: 409, nothing kept.
    expect((await signed(path, fence, { ...batch, attempt: 2 })).body).toMatchObject({
      code: 40901,
    });
    expect((await signed(path, 0, batch)).body).toMatchObject({ code: 40901 });
    expect(
      (await signed('/v1/tasks/01JDZ0000000000000000NOPE0/logs', 1, batch)).body,
    ).toMatchObject({ code: 40401 });
    const bad = await signed(path, fence, { attempt: 1, lines: [{ seq: -1, level: 'loud' }] });
    expect([bad.status, bad.body.code]).toEqual([400, 40000]);
    // ISO 8601 the date-time of the contract is not (basic form, a comma before the fraction):
    // refused whole, nothing kept, and what was kept still reads.
    for (const at of ['20261129T040000Z', '2026-11-29T04:00:00,5Z']) {
      const odd = await signed(path, fence, {
        attempt: 1,
        lines: [{ seq: 102, at, level: 'info', message: 'odd time' }],
      });
      expect([at, odd.status, odd.body.code, odd.body.message]).toEqual([
        at,
        400,
        40000,
        `lines[0].at must be an RFC 3339 date-time (as toISOString() writes it), not "${at}"`,
      ]);
    }
    expect((await page(id, 1, '?after=99')).items.map((l) => l.message)).toEqual(['a', 'b']);
  });

  it('takes the lines of many attempts in one call, each kept or refused on its own', async () => {
    const ids = [
      await api.create({ create_info: { task_type: 'demo.echo', task_name: 'together 1' } }),
      await api.create({ create_info: { task_type: 'demo.echo', task_name: 'together 2' } }),
    ];
    const [a, b] = await Promise.all(ids.map((id) => finished(id)));
    const line = (seq: number, message: string) => ({
      seq,
      at: new Date(baton.clock.now()).toISOString(),
      level: 'info',
      message,
    });
    const batches = [
      {
        task_id: ids[0],
        attempt: 1,
        fence: Number(a.fence),
        lines: [line(200, 'a1'), line(201, 'a2')],
      },
      { task_id: ids[1], attempt: 1, fence: Number(b.fence), lines: [line(200, 'b1')] },
      // Refused on their own: an attempt the task never had, a task that does not exist.
      { task_id: ids[1], attempt: 2, fence: Number(b.fence), lines: [line(0, 'never')] },
      { task_id: '01JDZ0000000000000000NOPE0', attempt: 1, fence: 1, lines: [line(0, 'x')] },
    ];
    const first = await signed('/v1/attempt-logs', 0, { batches });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({
      results: [
        { task_id: ids[0], attempt: 1, accepted: 2, duplicates: 0 },
        { task_id: ids[1], attempt: 1, accepted: 1, duplicates: 0 },
        { task_id: ids[1], attempt: 2, refused: 'stale' },
        { task_id: '01JDZ0000000000000000NOPE0', attempt: 1, refused: 'unknown' },
      ],
    });
    // Sent again whole (a retry after a 5xx): kept once.
    expect(
      ((await signed('/v1/attempt-logs', 0, { batches })).body.data as { results: unknown[] })
        .results[0],
    ).toMatchObject({ accepted: 0, duplicates: 2 });
    expect((await page(ids[0], 1, '?after=199')).items.map((l) => l.message)).toEqual(['a1', 'a2']);
    expect((await page(ids[1], 1, '?after=199')).items.map((l) => l.message)).toEqual(['b1']);
    // More than 2,000 lines in one call: refused whole, nothing kept.
    const many = Array.from({ length: 5 }, (_, i) => ({
      task_id: ids[0],
      attempt: 1,
      fence: Number(a.fence),
      lines: Array.from({ length: 401 }, (_, j) => line(1000 + i * 401 + j, 'many')),
    }));
    const tooMany = await signed('/v1/attempt-logs', 0, { batches: many });
    expect([tooMany.status, tooMany.body.code]).toEqual([400, 40000]);
    expect((await page(ids[0], 1, '?after=999')).items).toEqual([]);
  });

  it('keeps the lines through a scheduler restart, and after the worker is gone', async () => {
    await baton.addWorker('logs-worker-2');
    const id = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'logs through a restart' },
      params: { seconds: 3, tick_ms: 250 },
    });
    await waits.eventually(
      async () => ((await page(id, 1)).items.length > 0 ? true : undefined),
      SETTLE_MS,
      'the first line',
    );
    // The worker runs on and logs while no scheduler answers; it keeps its lines and sends
    // them once one does.
    await baton.stopScheduler();
    await baton.clock.advance(1500);
    await baton.startScheduler();
    await finished(id);
    const lines = await waits.eventually(
      async () => {
        const p = await page(id, 1);
        return p.items.some((l) => l.message.startsWith('done')) ? p.items : undefined;
      },
      SETTLE_MS,
      'every line',
    );
    expect(lines.map((l) => l.seq)).toEqual(lines.map((_, i) => i));
    expect(lines).toHaveLength(14);
    // Workers that are gone leave their lines.
    await baton.removeWorker('logs-worker');
    await baton.removeWorker('logs-worker-2');
    expect((await page(id, 1)).items).toEqual(lines);
  });

  it('streams the lines as server-sent events, from a place given', async () => {
    const tasks = (await api.call<{ task_id: string; task_name: string }[]>('GET', '/v1/tasks'))
      .data as unknown as { items: { task_id: string; task_name: string }[] };
    const id = tasks.items.find((t) => t.task_name === 'logs its ticks')!.task_id;
    const controller = new AbortController();
    const res = await request(`${api.base}/v1/tasks/${id}/attempts/1/logs/stream?after=2`, {
      headers: { authorization: `Bearer ${api.apiKey}` },
      signal: controller.signal,
    });
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    let text = '';
    for await (const chunk of res.body) {
      text += String(chunk);
      if ((text.match(/^event: log$/gm) ?? []).length >= 3) break;
    }
    controller.abort();
    const events = text
      .split('\n\n')
      .filter((e) => e.includes('event: log'))
      .map((e) => ({
        id: /^id: (\d+)$/m.exec(e)?.[1],
        line: JSON.parse(/^data: (.*)$/m.exec(e)![1]) as Line,
      }));
    expect(events.map((e) => [e.id, e.line.seq, e.line.message.slice(0, 6)])).toEqual([
      ['3', 3, 'tick 3'],
      ['4', 4, 'tick 4'],
      ['5', 5, 'done: '],
    ]);
  });
});
