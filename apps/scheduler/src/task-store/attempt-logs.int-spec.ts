import { DataSource } from 'typeorm';
import { createDataSource } from '../database';
import {
  TestDatabase,
  mysqlTestDatabase,
  sqliteTestDatabase,
} from '../database/testing/test-databases';
import { ENTITIES } from '../entities';
import { AttemptLogLine } from './attempt-logs.repository';
import { newTask } from './testing/new-task';
import { taskStoreStack } from './testing/task-store-stack';

const line = (seq: number, over: Partial<AttemptLogLine> = {}): AttemptLogLine => ({
  seq,
  at: 1_700_000_000_000 + seq,
  level: 'info',
  message: `line ${seq}`,
  fields: null,
  ...over,
});
const CAPS = { maxLines: 1000, maxBytes: 1_000_000 };

describe.each([
  ['sqlite', async () => sqliteTestDatabase()],
  ['mysql', mysqlTestDatabase],
])('attempt logs on %s', (_name, make: () => Promise<TestDatabase>) => {
  let testDb: TestDatabase;
  let ds: DataSource;
  let store: ReturnType<typeof taskStoreStack>;

  beforeAll(async () => {
    testDb = await make();
    ds = createDataSource(testDb.config, ENTITIES);
    await ds.initialize();
    await ds.runMigrations();
    store = taskStoreStack(ds);
  });

  afterAll(async () => {
    await ds?.destroy();
    await testDb?.drop();
  });

  it("checks a worker's task, attempt and fence in the group, and keeps only what holds", async () => {
    const logs = store.attemptLogs;
    // A task on its second attempt, driven with fence 7 (the first attempt with 4).
    const t = newTask({ attempt: 2, fence: 7 });
    await store.tasks.insert(t, 'created', 'api');
    for (const [attempt, fence] of [
      [1, 4],
      [2, 7],
    ])
      await store.exec(
        'INSERT INTO baton_task_attempt (task_id, attempt, fence, started_at) VALUES (?, ?, ?, ?)',
        [t.taskId, attempt, fence, 1_700_000_000_000],
      );
    // One group: all sent at once.
    const verdicts = await Promise.all([
      logs.appendFromWorker(t.taskId, 2, 7, [line(0)], CAPS),
      logs.appendFromWorker(t.taskId, 1, 4, [line(0)], CAPS),
      logs.appendFromWorker(t.taskId, 1, 7, [line(1)], CAPS),
      logs.appendFromWorker(t.taskId, 3, 7, [line(0)], CAPS),
      logs.appendFromWorker(t.taskId, 2, 6, [line(1)], CAPS),
      logs.appendFromWorker(t.taskId, 2, 8, [line(1)], CAPS),
      logs.appendFromWorker('T-nobody', 1, 1, [line(0)], CAPS),
    ]);
    expect(verdicts).toEqual([
      { accepted: 1, duplicates: 0 },
      { accepted: 1, duplicates: 0 },
      // A later fence of the task, for its first attempt: one the attempt was not driven with
      // is refused only when older than the attempt's; newer ones (a takeover) are taken.
      { accepted: 1, duplicates: 0 },
      'stale',
      'stale',
      'stale',
      'unknown',
    ]);
    expect(
      (await logs.page(t.taskId, 2, { after: -1, limit: 10 })).lines.map((l) => l.seq),
    ).toEqual([0]);
    expect(
      (await logs.page(t.taskId, 1, { after: -1, limit: 10 })).lines.map((l) => l.seq),
    ).toEqual([0, 1]);
  });

  it('keeps a line once however often it is sent, in seq order, per attempt', async () => {
    const logs = store.attemptLogs;
    expect(await logs.append('T-dup', 1, [line(0), line(1), line(2)], CAPS)).toEqual({
      accepted: 3,
      duplicates: 0,
    });
    // A resend of a batch, with one new line, out of order.
    expect(await logs.append('T-dup', 1, [line(3), line(1), line(2), line(2)], CAPS)).toEqual({
      accepted: 1,
      duplicates: 3,
    });
    // The same seq of another attempt is another line.
    expect(await logs.append('T-dup', 2, [line(0, { message: 'second' })], CAPS)).toEqual({
      accepted: 1,
      duplicates: 0,
    });
    const page = await logs.page('T-dup', 1, { after: -1, limit: 10 });
    expect(page.lines.map((l) => [l.seq, l.message])).toEqual([
      [0, 'line 0'],
      [1, 'line 1'],
      [2, 'line 2'],
      [3, 'line 3'],
    ]);
    expect([page.nextAfter, page.more, page.dropped]).toEqual([3, false, 0]);
    expect((await logs.page('T-dup', 2, { after: -1, limit: 10 })).lines).toEqual([
      { ...line(0, { message: 'second' }) },
    ]);
    // A resend in a group with others (they queue behind a write in flight): the insert the
    // unique key refuses is written again without the kept line, and every append is answered.
    const answers = await Promise.all([
      logs.append('T-dup-other', 1, [line(0)], CAPS),
      logs.append('T-dup', 1, [line(4), line(3)], CAPS),
      logs.append('T-dup-third', 1, [line(0), line(1)], CAPS),
    ]);
    expect(answers).toEqual([
      { accepted: 1, duplicates: 0 },
      { accepted: 1, duplicates: 1 },
      { accepted: 2, duplicates: 0 },
    ]);
    expect((await logs.page('T-dup', 1, { after: -1, limit: 10 })).lines.map((l) => l.seq)).toEqual(
      [0, 1, 2, 3, 4],
    );
    expect((await logs.page('T-dup-third', 1, { after: -1, limit: 10 })).lines).toHaveLength(2);
  });

  it('pages by seq, and filters by level (and above) and by words in any case', async () => {
    const logs = store.attemptLogs;
    await logs.append(
      'T-page',
      1,
      [
        line(0, { level: 'debug', message: 'Connecting to db1' }),
        line(1, { level: 'info', message: 'connected', fields: { host: 'db1', ms: 12 } }),
        line(2, { level: 'warn', message: 'Replica lag 4 s' }),
        line(3, { level: 'error', message: 'failover of 100% aborted' }),
      ],
      CAPS,
    );
    const first = await logs.page('T-page', 1, { after: -1, limit: 2 });
    expect(first.lines.map((l) => l.seq)).toEqual([0, 1]);
    expect([first.nextAfter, first.more]).toEqual([1, true]);
    expect(first.lines[1].fields).toEqual({ host: 'db1', ms: 12 });
    const rest = await logs.page('T-page', 1, { after: first.nextAfter, limit: 2 });
    expect([rest.lines.map((l) => l.seq), rest.more]).toEqual([[2, 3], false]);
    const warn = await logs.page('T-page', 1, { after: -1, limit: 10, minLevel: 'warn' });
    expect(warn.lines.map((l) => l.level)).toEqual(['warn', 'error']);
    const words = await logs.page('T-page', 1, { after: -1, limit: 10, text: 'DB1' });
    expect(words.lines.map((l) => l.seq)).toEqual([0]);
    // A LIKE wildcard in the words is a plain character.
    const percent = await logs.page('T-page', 1, { after: -1, limit: 10, text: '100%' });
    expect(percent.lines.map((l) => l.seq)).toEqual([3]);
    // Nothing after the last: the cursor stays where it was given.
    const none = await logs.page('T-page', 1, { after: 3, limit: 10 });
    expect([none.lines, none.nextAfter, none.more]).toEqual([[], 3, false]);
  });

  it('keeps an attempt within its caps by dropping its oldest lines, and counts them', async () => {
    const logs = store.attemptLogs;
    const caps = { maxLines: 10, maxBytes: 1_000_000 };
    await logs.append(
      'T-cap',
      1,
      Array.from({ length: 8 }, (_, i) => line(i)),
      caps,
    );
    await logs.append(
      'T-cap',
      1,
      Array.from({ length: 7 }, (_, i) => line(8 + i)),
      caps,
    );
    const page = await logs.page('T-cap', 1, { after: -1, limit: 100 });
    expect(page.lines.map((l) => l.seq)).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    expect(page.dropped).toBe(5);
    // By bytes too: a long line pushes out as many old ones as it takes.
    const bytes = { maxLines: 1000, maxBytes: 3000 };
    await logs.append(
      'T-bytes',
      1,
      Array.from({ length: 5 }, (_, i) => line(i)),
      bytes,
    );
    await logs.append('T-bytes', 1, [line(5, { message: 'x'.repeat(2960) })], bytes);
    const big = await logs.page('T-bytes', 1, { after: -1, limit: 100 });
    expect(big.lines.map((l) => l.seq)).toEqual([5]);
    expect(big.dropped).toBe(5);
  });

  it('writes appends that arrive together in shared transactions, each answered for itself', async () => {
    const logs = store.attemptLogs;
    const caps = { maxLines: 4, maxBytes: 1_000_000 };
    // 60 attempts at once, one of them sent twice and one over its cap.
    const sent = Array.from({ length: 60 }, (_, i) =>
      logs.append(`T-group-${i}`, 1, [line(0), line(1), line(2)], caps),
    );
    sent.push(logs.append('T-group-7', 1, [line(1), line(2), line(3)], caps));
    sent.push(logs.append('T-group-9', 1, [line(3), line(4), line(5)], caps));
    const answers = await Promise.all(sent);
    expect(answers.slice(0, 60).every((a) => a.accepted + a.duplicates === 3)).toBe(true);
    expect(answers[60]).toEqual({ accepted: 1, duplicates: 2 });
    expect(answers[61]).toEqual({ accepted: 3, duplicates: 0 });
    expect(
      (await logs.page('T-group-7', 1, { after: -1, limit: 10 })).lines.map((l) => l.seq),
    ).toEqual([0, 1, 2, 3]);
    const capped = await logs.page('T-group-9', 1, { after: -1, limit: 10 });
    expect([capped.lines.map((l) => l.seq), capped.dropped]).toEqual([[2, 3, 4, 5], 2]);
    for (const i of [0, 33, 59])
      expect((await logs.page(`T-group-${i}`, 1, { after: -1, limit: 10 })).lines).toHaveLength(3);
  });

  it('goes with its task when the task is purged', async () => {
    const t = newTask({ status: 'FINISH' as never, finishedAt: 1 });
    await store.tasks.insert(t, 'made', 'test');
    await store.attemptLogs.append(t.taskId, 1, [line(0), line(1)], CAPS);
    expect(await store.purge.purge([t.taskId])).toBe(1);
    const page = await store.attemptLogs.page(t.taskId, 1, { after: -1, limit: 10 });
    expect([page.lines, page.dropped]).toEqual([[], 0]);
  });
});
