import { DataSource } from 'typeorm';
import { createDataSource, MIGRATIONS } from '../database';
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
])('attempt logs on %s', (name, make: () => Promise<TestDatabase>) => {
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

  it('takes a resend of lines the caps dropped since as sent before, not as new', async () => {
    const logs = store.attemptLogs;
    const caps = { maxLines: 4, maxBytes: 1_000_000 };
    await logs.append(
      'T-gone',
      1,
      [0, 1, 2, 3, 4, 5].map((i) => line(i)),
      caps,
    );
    // Lines 0 and 1 went for the caps; the worker, whose answer was lost, sends 0-3 again.
    expect(
      await logs.append(
        'T-gone',
        1,
        [0, 1, 2, 3].map((i) => line(i)),
        caps,
      ),
    ).toEqual({
      accepted: 0,
      duplicates: 4,
    });
    const page = await logs.page('T-gone', 1, { after: -1, limit: 10 });
    expect([page.lines.map((l) => l.seq), page.dropped]).toEqual([[2, 3, 4, 5], 2]);
  });

  it('pages in seq order over many chunks, a late line among them', async () => {
    const logs = store.attemptLogs;
    // 150 batches of two lines (seq 0-299, every seventh missing), then the missing ones late.
    const missing = (i: number): boolean => i % 7 === 3;
    for (let b = 0; b < 150; b++)
      await logs.append(
        'T-many',
        1,
        [2 * b, 2 * b + 1]
          .filter((i) => !missing(i))
          .map((i) => line(i, { level: i % 10 === 0 ? 'error' : 'info' })),
        CAPS,
      );
    const late = Array.from({ length: 300 }, (_, i) => i).filter(missing);
    expect(
      await logs.append(
        'T-many',
        1,
        late.map((i) => line(i, { message: `late ${i}` })),
        CAPS,
      ),
    ).toEqual({
      accepted: late.length,
      duplicates: 0,
    });
    const seen: number[] = [];
    let after = -1;
    for (;;) {
      const page = await logs.page('T-many', 1, { after, limit: 37 });
      seen.push(...page.lines.map((l) => l.seq));
      after = page.nextAfter;
      if (!page.more) break;
      expect(page.lines).toHaveLength(37);
    }
    expect(seen).toEqual(Array.from({ length: 300 }, (_, i) => i));
    const errors = await logs.page('T-many', 1, { after: 95, limit: 5, minLevel: 'error' });
    expect([errors.lines.map((l) => l.seq), errors.more]).toEqual([
      [100, 110, 120, 130, 140],
      true,
    ]);
    const words = await logs.page('T-many', 1, { after: -1, limit: 100, text: 'LATE 2' });
    expect(words.lines.map((l) => l.seq)).toEqual(late.filter((i) => String(i).startsWith('2')));
  });

  // Several schedulers share MySQL only: SQLite is the embedded default of one process, so the
  // case is not written for it (nothing is reported skipped).
  if (name === 'mysql')
    it('keeps its counts true when two schedulers write one attempt over its cap at once', async () => {
      // A second scheduler: its own data source and pool on the same database.
      const other = createDataSource(testDb.config, ENTITIES);
      await other.initialize();
      try {
        const a = store.attemptLogs;
        const b = taskStoreStack(other).attemptLogs;
        const caps = { maxLines: 25, maxBytes: 1_000_000 };
        // Two writers of one attempt, each its own seqs (a worker sending in parallel), at once.
        for (let round = 0; round < 6; round++)
          await Promise.all(
            [a, b].map((logs, w) =>
              logs.append(
                'T-race',
                1,
                Array.from({ length: 10 }, (_, i) => line(round * 100 + w * 10 + i)),
                caps,
              ),
            ),
          );
        const kept = await a.page('T-race', 1, { after: -1, limit: 1000 });
        const seqs = kept.lines.map((l) => l.seq);
        expect(new Set(seqs).size).toBe(seqs.length);
        expect(seqs.length).toBeLessThanOrEqual(caps.maxLines);
        expect(seqs.length + kept.dropped).toBe(120);
        const usage = await store.exec(
          "SELECT line_count FROM baton_task_log_usage WHERE task_id = 'T-race' AND attempt = 1",
        );
        expect(Number((usage.records[0] as { line_count: unknown }).line_count)).toBe(seqs.length);
      } finally {
        await other.destroy();
      }
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

describe.each([
  ['sqlite', async () => sqliteTestDatabase()],
  ['mysql', mysqlTestDatabase],
])('attempt log chunks migration on %s', (_name, make: () => Promise<TestDatabase>) => {
  let testDb: TestDatabase;
  const opened: DataSource[] = [];

  /** A data source over the schema's history up to (and with `upTo` also) the chunks. */
  const open = async (migrations: number): Promise<DataSource> => {
    const base = createDataSource(testDb.config, ENTITIES);
    const ds = new DataSource({ ...base.options, migrations: MIGRATIONS.slice(0, migrations) });
    await ds.initialize();
    opened.push(ds);
    return ds;
  };

  beforeAll(async () => {
    testDb = await make();
  });

  afterAll(async () => {
    for (const ds of opened) if (ds.isInitialized) await ds.destroy();
    await testDb?.drop();
  });

  it('moves the lines kept a row each into chunks, and back', async () => {
    const at = MIGRATIONS.findIndex((m) => m.name === 'AttemptLogChunks1766700000000');
    expect(at).toBeGreaterThan(0);
    const before = await open(at);
    await before.runMigrations();
    const insert = (
      taskId: string,
      attempt: number,
      seq: number,
      level: string,
      fields: string | null,
    ) =>
      before.query(
        'INSERT INTO baton_task_log_line (task_id, attempt, seq, at, level, message, fields, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
        [taskId, attempt, seq, 1_700_000_000_000 + seq, level, `line ${seq}`, fields, 40],
      );
    // Inserted out of order, two attempts interleaved; attempt 1 had its line 0 dropped.
    await insert('T-old', 1, 2, 'warn', '{"host":"db1"}');
    await insert('T-old', 2, 0, 'info', null);
    await insert('T-old', 1, 1, 'info', null);
    await insert('T-old', 1, 3, 'error', null);
    await before.query(
      'INSERT INTO baton_task_log_usage (task_id, attempt, line_count, byte_count, dropped) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)',
      ['T-old', 1, 3, 120, 1, 'T-old', 2, 1, 40, 0],
    );
    // A first start stopped after the copy, before the old table went (MySQL commits each DDL
    // statement, so what it made stays): the next start runs the migration again, whole.
    const runner = before.createQueryRunner();
    const stopped = new Proxy(runner, {
      get: (target, prop, receiver) =>
        prop === 'dropTable'
          ? () => Promise.reject(new Error('stopped'))
          : (Reflect.get(target, prop, receiver) as unknown),
    });
    await expect(new MIGRATIONS[at]().up(stopped)).rejects.toThrow('stopped');
    await runner.release();
    await before.destroy();

    const ds = await open(at + 1);
    await ds.runMigrations();
    const logs = taskStoreStack(ds).attemptLogs;
    const one = await logs.page('T-old', 1, { after: -1, limit: 10 });
    expect(one.lines).toEqual([
      line(1),
      line(2, { level: 'warn', fields: { host: 'db1' } }),
      line(3, { level: 'error' }),
    ]);
    expect(one.dropped).toBe(1);
    expect(
      (await logs.page('T-old', 1, { after: -1, limit: 10, minLevel: 'error' })).lines,
    ).toEqual([line(3, { level: 'error' })]);
    expect((await logs.page('T-old', 2, { after: -1, limit: 10 })).lines).toEqual([line(0)]);
    // The highest kept seq came along: a resend is known without reading, the next line is new.
    expect(await logs.append('T-old', 1, [line(0), line(3), line(4)], CAPS)).toEqual({
      accepted: 1,
      duplicates: 2,
    });

    await ds.undoLastMigration();
    const rows = (await ds.query(
      "SELECT attempt, seq, level, fields FROM baton_task_log_line WHERE task_id = 'T-old' ORDER BY attempt, seq",
    )) as { attempt: unknown; seq: unknown; level: string; fields: string | null }[];
    expect(rows.map((r) => [Number(r.attempt), Number(r.seq), r.level, r.fields])).toEqual([
      [1, 1, 'info', null],
      [1, 2, 'warn', '{"host":"db1"}'],
      [1, 3, 'error', null],
      [1, 4, 'info', null],
      [2, 0, 'info', null],
    ]);
  });
});
