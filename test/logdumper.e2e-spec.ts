import {
  appendFileSync,
  mkdtempSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { createConnection } from 'mysql2/promise';
import {
  Api,
  Backend,
  embeddedBackend,
  productionBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually, schedule } from './support/processes';

// Each case waits for a final state with a deadline a loaded box meets (90 s a wait).
jest.setTimeout(300_000);

interface TaskRow {
  task_id: string;
  idempotency_key: string | null;
  params: Record<string, unknown>;
  labels: Record<string, string>;
}

interface IngestAnswer {
  accepted: number;
  dropped: number;
  unmatched: number;
  matched: number;
  created: number;
  duplicates: number;
  rejected: number;
  errors: { index: number; outcome: string; reason: string }[];
}

function startWorker(dir: string, schedulerUrl: string): Promise<RunningProcess> {
  return startTemplateWorker('logdumper-worker', schedulerUrl, join(dir, 'runs.jsonl'), {
    WORKER_ROLLBACK_DIR: join(dir, 'rollback'),
  });
}

/** Every task a source produced (one page is plenty for these tests). */
async function tasksOf(api: Api, source: string): Promise<TaskRow[]> {
  const res = await api.call<{ items: TaskRow[] }>(
    'GET',
    `/v1/tasks?label=${encodeURIComponent(`log_source:${source}`)}&limit=500`,
  );
  expect(res.status).toBe(200);
  return res.data.items;
}

/** Waits until a source made `n` tasks, then checks they are exactly the expected jobs, once each. */
async function expectExactlyOnce(api: Api, source: string, jobs: number[]): Promise<void> {
  const tasks = await eventually(
    async () => {
      const t = await tasksOf(api, source);
      return t.length >= jobs.length ? t : undefined;
    },
    90_000,
    `${jobs.length} tasks from ${source}`,
  );
  const keys = tasks.map((t) => t.idempotency_key);
  expect(new Set(keys).size).toBe(keys.length);
  expect(tasks.map((t) => Number(t.params.job)).sort((a, b) => a - b)).toEqual(jobs);
}

// On the embedded defaults only: MariaDB, Redis and the other lock backends are proven by the
// store, queue and lock conformance suites and the scheduler-flows and crash e2e files.
describe.each([['sqlite + memory + local locks', async () => embeddedBackend()]])(
  'LogDumper HTTP ingest on %s',
  (_name, makeBackend: () => Promise<Backend>) => {
    let backend: Backend;
    let scheduler: RunningProcess;
    let worker: RunningProcess;
    let api: Api;
    let dir: string;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'baton-logs-'));
      backend = await makeBackend();
      scheduler = await startScheduler(backend);
      api = new Api(scheduler.url);
      worker = await startWorker(dir, api.base);
      await api.waitForWorkers(1);
    });

    afterAll(async () => {
      await worker?.stop();
      await scheduler?.stop();
      await backend?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    it('refuses bad rules with a 400 envelope and writes nothing', async () => {
      const good = {
        name: 'r',
        match: { regex: 'x(?<a>y)' },
        template: { create_info: { task_type: 'demo.echo', task_name: '{{a}}' } },
      };
      const bad = [
        { ...good, match: { regex: 'x(' } },
        { ...good, match: { regex: 'x', extra: 1 } },
        { ...good, surprise: true },
        { ...good, sources: ['ftp:x'] },
        { ...good, template: { create_info: { task_type: 'demo.echo', task_name: '{{nope}}' } } },
        { ...good, template: { create_info: { task_name: 'no type' } } },
        { ...good, template: { ...good.template, idempotency_key: 'k' } },
      ];
      for (const body of bad) {
        const res = await api.call('POST', '/v1/log-rules', body);
        expect({ status: res.status, code: res.code }).toEqual({ status: 400, code: 40000 });
        expect(res.message.length).toBeGreaterThan(0);
      }
      const list = await api.call<unknown[]>('GET', '/v1/log-rules');
      expect(list.data).toEqual([]);
      const missing = await api.call('GET', '/v1/log-rules/01ARZ3NDEKTSV4RRFFQ69G5FAV');
      expect(missing.status).toBe(404);
    });

    it('makes tasks from a batch, drops malformed records, and creates nothing on replay', async () => {
      const rule = await api.call<{ rule_id: string }>('POST', '/v1/log-rules', {
        name: 'disk full',
        sources: ['http:*'],
        match: { regex: 'disk full on (?<host>[\\w.-]+)' },
        template: {
          create_info: { task_type: 'demo.echo', task_name: 'clean {{host}}' },
          params: { host: '{{host}}', line: '{{_line}}' },
        },
      });
      expect(rule.status).toBe(201);
      const jsonRule = await api.call<{ rule_id: string }>('POST', '/v1/log-rules', {
        name: 'json errors',
        sources: ['http:app'],
        match: { json: { level: { equals: 'error' }, 'ctx.job': { exists: true } } },
        template: {
          create_info: { task_type: 'demo.echo', task_name: 'job {{ctx.job}}' },
          params: { job: '{{ctx.job}}' },
        },
      });
      expect(jsonRule.status).toBe(201);
      const batch = {
        source: 'app',
        records: [
          { position: 1, line: 'ERROR disk full on db1' },
          { position: 2, line: 'INFO all good' },
          { position: 3, fields: { level: 'error', ctx: { job: 42 } } },
          { position: 4, line: '{"level":"error","ctx":{"job":43}}' },
          { line: 'no position: malformed' },
          { position: 5, line: 'x', extra: 'field' },
          'not an object',
          { position: 6, line: 'WARN disk full on db2' },
        ],
      };
      const first = await api.call<IngestAnswer>('POST', '/v1/logs', batch);
      expect(first.status).toBe(200);
      expect(first.data).toMatchObject({
        accepted: 5,
        dropped: 3,
        unmatched: 1,
        matched: 4,
        created: 4,
        duplicates: 0,
        rejected: 0,
      });
      expect(first.data.errors.map((e) => [e.index, e.outcome])).toEqual([
        [4, 'dropped'],
        [5, 'dropped'],
        [6, 'dropped'],
      ]);
      const tasks = await tasksOf(api, 'http:app');
      expect(tasks.map((t) => t.idempotency_key).sort()).toEqual(
        [
          `log:http:app:1:${rule.data.rule_id}`,
          `log:http:app:3:${jsonRule.data.rule_id}`,
          `log:http:app:4:${jsonRule.data.rule_id}`,
          `log:http:app:6:${rule.data.rule_id}`,
        ].sort(),
      );
      const db1 = tasks.find((t) => t.params.host === 'db1');
      expect(db1?.params).toEqual({ host: 'db1', line: 'ERROR disk full on db1' });
      // A whole placeholder under params keeps the JSON type of the field.
      expect(tasks.find((t) => t.params.job === 42)).toBeDefined();

      const replay = await api.call<IngestAnswer>('POST', '/v1/logs', batch);
      expect(replay.data).toMatchObject({ created: 0, duplicates: 4, dropped: 3 });
      expect(await tasksOf(api, 'http:app')).toHaveLength(4);

      const stats = await api.call<{ sources: Record<string, Record<string, number>> }>(
        'GET',
        '/v1/logs/stats',
      );
      expect(stats.data.sources['http:app']).toMatchObject({
        ingested: 16,
        dropped: 6,
        matched: 8,
        created: 4,
        duplicate: 4,
      });
    });

    it('refuses a malformed request, and a disabled rule matches nothing', async () => {
      const noRecords = await api.call('POST', '/v1/logs', { source: 'app', records: [] });
      expect(noRecords.status).toBe(400);
      const badSource = await api.call('POST', '/v1/logs', { source: 'a b', records: [{}] });
      expect(badSource.status).toBe(400);
      const rules = (await api.call<{ rule_id: string }[]>('GET', '/v1/log-rules')).data;
      expect(rules).toHaveLength(2);
      for (const r of rules) {
        const off = await api.call('PATCH', `/v1/log-rules/${r.rule_id}`, { enabled: false });
        expect(off.status).toBe(200);
        expect(off.data).toMatchObject({ enabled: false });
      }
      const res = await api.call<IngestAnswer>('POST', '/v1/logs', {
        source: 'app',
        records: [{ position: 100, line: 'ERROR disk full on db9' }],
      });
      expect(res.data).toMatchObject({ accepted: 1, unmatched: 1, created: 0 });
      const del = await api.call('DELETE', `/v1/log-rules/${rules[0].rule_id}`);
      expect(del.status).toBe(200);
      expect((await api.call<unknown[]>('GET', '/v1/log-rules')).data).toHaveLength(1);
    });
  },
);

describe('LogDumper file and stream sources on mariadb + redis', () => {
  let backend: Backend;
  let scheduler: RunningProcess;
  let worker: RunningProcess;
  let api: Api;
  let dir: string;
  let redis: Redis;
  let streamKey: string;
  let logPath: string;
  let truncPath: string;
  let crashPath: string;
  let crashStreamKey: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-logs-src-'));
    backend = await productionBackend();
    // The backend's cleanup deletes every key under its e2e prefix.
    streamKey = String(backend.env.BATON_QUEUE_PREFIX).replace(/:q$/, ':logs');
    logPath = join(dir, 'app.log');
    writeFileSync(logPath, '');
    truncPath = join(dir, 'trunc.log');
    writeFileSync(truncPath, '');
    crashPath = join(dir, 'crashed.log');
    writeFileSync(crashPath, '');
    crashStreamKey = `${streamKey}-crashed`;
    redis = new Redis({ host: '127.0.0.1', port: 6379 });
    env = {
      BATON_LOG_FILES: `app=${logPath},trunc=${truncPath},crashed=${crashPath}`,
      BATON_LOG_STREAMS: `events=${streamKey},crashed=${crashStreamKey}`,
      BATON_LOG_POLL_MS: '50',
      BATON_LOG_BATCH: '4',
      BATON_LOG_FILE_LEASE_MS: '1500',
      BATON_LOG_STREAM_CLAIM_IDLE_MS: '1000',
      BATON_LOG_STREAM_BLOCK_MS: '200',
    };
    scheduler = await startScheduler(backend, env);
    api = new Api(scheduler.url);
    worker = await startWorker(dir, api.base);
    await api.waitForWorkers(1);
    const fileRule = await api.call('POST', '/v1/log-rules', {
      name: 'file errors',
      sources: ['file:app'],
      match: { regex: 'ERROR job=(?<job>\\d+)' },
      template: {
        create_info: { task_type: 'demo.echo', task_name: 'job {{job}}' },
        params: { job: '{{job}}' },
      },
    });
    expect(fileRule.status).toBe(201);
    const streamRule = await api.call('POST', '/v1/log-rules', {
      name: 'stream errors',
      sources: ['stream:events'],
      match: { json: { level: { equals: 'error' } } },
      template: {
        create_info: { task_type: 'demo.echo', task_name: 'job {{job}}' },
        params: { job: '{{job}}' },
      },
    });
    expect(streamRule.status).toBe(201);
    // The same rules for the sources of the truncation and crash-point tests.
    const moreFiles = await api.call('POST', '/v1/log-rules', {
      name: 'file errors (truncated, crashed)',
      sources: ['file:trunc', 'file:crashed'],
      match: { regex: 'ERROR job=(?<job>\\d+)' },
      template: {
        create_info: { task_type: 'demo.echo', task_name: 'job {{job}}' },
        params: { job: '{{job}}' },
      },
    });
    expect(moreFiles.status).toBe(201);
    const moreStreams = await api.call('POST', '/v1/log-rules', {
      name: 'stream errors (crashed)',
      sources: ['stream:crashed'],
      match: { json: { level: { equals: 'error' } } },
      template: {
        create_info: { task_type: 'demo.echo', task_name: 'job {{job}}' },
        params: { job: '{{job}}' },
      },
    });
    expect(moreStreams.status).toBe(201);
  });

  afterAll(async () => {
    await worker?.stop();
    await scheduler?.stop();
    redis?.disconnect();
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A new scheduler process on the same database, Redis, file and stream; the API follows its URL. */
  const start = async (): Promise<void> => {
    scheduler = await startScheduler(backend, env);
    api = new Api(scheduler.url);
  };

  it('tails a file through a rotation and a kill -9: every ERROR line makes one task', async () => {
    const expected: number[] = [];
    // Lines come in fives, the reader's turn between them.
    const yieldTurn = (): Promise<void> => new Promise((r) => setImmediate(r));
    /** Writes lines from..to; `meanwhile` starts (not awaited) once line `at` is written. */
    const write = async (
      from: number,
      to: number,
      meanwhile?: { at: number; start: () => Promise<void> },
    ): Promise<void> => {
      let started: Promise<void> | undefined;
      for (let i = from; i < to; i++) {
        if (i % 3 === 0) expected.push(i);
        appendFileSync(logPath, i % 3 === 0 ? `t=${i} ERROR job=${i}\n` : `t=${i} INFO ok\n`);
        if (meanwhile && i === meanwhile.at) started = meanwhile.start();
        if (i % 5 === 0) await yieldTurn();
      }
      await started;
    };
    await write(0, 60);
    // Rotation by rename while lines keep coming; the running reader must follow it.
    renameSync(logPath, `${logPath}.1`);
    writeFileSync(logPath, '');
    await write(60, 90);
    await eventually(
      async () =>
        (await tasksOf(api, 'file:app')).some((t) => Number(t.params.job) >= 60) ? true : undefined,
      90_000,
      'a task from a line after the rotation',
    );
    // kill -9 while lines are still being written.
    await write(90, 150, { at: 100, start: () => scheduler.kill9() });
    // While it is down: a second rotation, which the new process must notice and follow.
    renameSync(logPath, `${logPath}.2`);
    writeFileSync(logPath, '');
    await write(150, 180);
    await start();
    appendFileSync(logPath, Buffer.from([0xff, 0xfe, 0x20, 0x45, 0x0a])); // not UTF-8
    await write(180, 200);
    await expectExactlyOnce(api, 'file:app', expected);
    const stats = await api.call<{ sources: Record<string, Record<string, number>> }>(
      'GET',
      '/v1/logs/stats',
    );
    expect(stats.data.sources['file:app'].dropped).toBe(1);
  });

  it('consumes a Redis stream through a kill -9: every error entry makes one task, none pending', async () => {
    const expected: number[] = [];
    /** Adds entries from..to; `meanwhile` starts (not awaited) once entry `at` is added. */
    const add = async (
      from: number,
      to: number,
      meanwhile?: { at: number; start: () => Promise<void> },
    ): Promise<void> => {
      let started: Promise<void> | undefined;
      for (let i = from; i < to; i++) {
        const level = i % 2 === 0 ? 'error' : 'info';
        if (level === 'error') expected.push(i);
        await redis.xadd(streamKey, '*', 'json', JSON.stringify({ level, job: i }));
        if (meanwhile && i === meanwhile.at) started = meanwhile.start();
      }
      await started;
    };
    await add(0, 80);
    await eventually(
      async () => ((await tasksOf(api, 'stream:events')).length > 0 ? true : undefined),
      90_000,
      'first stream tasks',
    );
    // kill -9 while entries are still being added; more arrive while it is down.
    await add(80, 100, { at: 82, start: () => scheduler.kill9() });
    await add(100, 120);
    await start();
    await redis.xadd(streamKey, '*', 'json', '{not json');
    await add(120, 140);
    await expectExactlyOnce(api, 'stream:events', expected);
    await eventually(
      async () => {
        const pending = (await redis.xpending(streamKey, 'baton-logdumper')) as [number];
        return pending[0] === 0 ? true : undefined;
      },
      90_000,
      'empty pending list',
    );
    const stats = await api.call<{ sources: Record<string, Record<string, number>> }>(
      'GET',
      '/v1/logs/stats',
    );
    expect(stats.data.sources['stream:events'].dropped).toBe(1);
  });

  /** Jobs of every ERROR line written to trunc.log, across its truncations. */
  const truncJobs: number[] = [];
  const writeTrunc = (from: number, to: number): void => {
    for (let i = from; i < to; i++) {
      if (i % 2 === 0) truncJobs.push(i);
      appendFileSync(truncPath, i % 2 === 0 ? `t=${i} ERROR job=${i}\n` : `t=${i} INFO ok\n`);
    }
  };

  it('reads a file truncated in place (copytruncate) again: every new ERROR line makes a task', async () => {
    writeTrunc(1000, 1040);
    await expectExactlyOnce(api, 'file:trunc', truncJobs);
    // Truncated, then fewer bytes than before: the same inode, the same offsets as old lines.
    truncateSync(truncPath, 0);
    writeTrunc(2000, 2010);
    await expectExactlyOnce(api, 'file:trunc', truncJobs);
    truncateSync(truncPath, 0);
    writeTrunc(2100, 2104);
    await expectExactlyOnce(api, 'file:trunc', truncJobs);
  });

  it('notices a truncation the reader never saw (more bytes than before written while it was down)', async () => {
    const before = statSync(truncPath).size;
    await scheduler.stop();
    truncateSync(truncPath, 0);
    writeTrunc(3000, 3100);
    expect(statSync(truncPath).size).toBeGreaterThan(before);
    await start();
    await expectExactlyOnce(api, 'file:trunc', truncJobs);
    // And once more while it runs: truncated and rewritten longer between two of its reads.
    const running = statSync(truncPath).size;
    truncateSync(truncPath, 0);
    writeTrunc(4000, 4200);
    expect(statSync(truncPath).size).toBeGreaterThan(running);
    await expectExactlyOnce(api, 'file:trunc', truncJobs);
  });

  /** Stops the scheduler, starts one armed to die once a batch's tasks exist, waits for its death. */
  const crashAfterLogTasks = async (
    name: string,
    feed: () => Promise<void>,
  ): Promise<RunningProcess> => {
    await scheduler.stop();
    const doomed = await startScheduler(backend, {
      ...env,
      BATON_INSTANCE_ID: `doomed-${name}`,
      BATON_CRASH_AT: 'after-log-tasks',
    });
    scheduler = doomed;
    await feed();
    await eventually(
      async () => (doomed.proc.signalCode === 'SIGKILL' ? true : undefined),
      20_000,
      'the scheduler dying at after-log-tasks',
    );
    expect(doomed.output()).toContain('crash point after-log-tasks');
    await start();
    return doomed;
  };

  /** Matches the new scheduler replayed (their tasks existed): the crash was after the tasks. */
  const duplicatesOf = async (source: string): Promise<number> => {
    const stats = await api.call<{ sources: Record<string, Record<string, number>> }>(
      'GET',
      '/v1/logs/stats',
    );
    return stats.data.sources[source]?.duplicate ?? 0;
  };

  it('a scheduler dies after a batch of file lines made tasks, before storing the offset: one task per line', async () => {
    const expected: number[] = [];
    await crashAfterLogTasks('file', async () => {
      for (let i = 0; i < 30; i++) {
        if (i % 3 === 0) expected.push(i);
        appendFileSync(crashPath, i % 3 === 0 ? `t=${i} ERROR job=${i}\n` : `t=${i} INFO ok\n`);
      }
    });
    // The new scheduler replays what the dead one had not acknowledged: once it has, every
    // record has exactly one task.
    await eventually(
      async () => ((await duplicatesOf('file:crashed')) > 0 ? true : undefined),
      20_000,
      'the replayed file records counted as duplicates',
    );
    await expectExactlyOnce(api, 'file:crashed', expected);
  });

  it('a scheduler dies after a batch of stream entries made tasks, before XACK: one task per entry, none pending', async () => {
    const expected: number[] = [];
    await crashAfterLogTasks('stream', async () => {
      for (let i = 0; i < 30; i++) {
        const level = i % 2 === 0 ? 'error' : 'info';
        if (level === 'error') expected.push(i);
        await redis.xadd(crashStreamKey, '*', 'json', JSON.stringify({ level, job: i }));
      }
    });
    // The new scheduler replays what the dead one had not acknowledged: once it has, every
    // record has exactly one task.
    await eventually(
      async () => ((await duplicatesOf('stream:crashed')) > 0 ? true : undefined),
      20_000,
      'the replayed stream records counted as duplicates',
    );
    await expectExactlyOnce(api, 'stream:crashed', expected);
    await eventually(
      async () => {
        const pending = (await redis.xpending(crashStreamKey, 'baton-logdumper')) as [number];
        return pending[0] === 0 ? true : undefined;
      },
      90_000,
      'empty pending list',
    );
  });

  it('takes a file over from a stored fence the lock never hands out, once that row is stale, with a warning', async () => {
    await scheduler.stop();
    // As after a switch of lock driver, or a Redis that lost its fence counter.
    const db = await createConnection({
      host: '127.0.0.1',
      port: 3306,
      user: 'root',
      password: '',
      database: String(backend.env.BATON_MYSQL_DATABASE),
    });
    const foreignRow = (): Promise<unknown> =>
      db.query(
        "UPDATE baton_log_offset SET fence = 1000000000, owner = 'gone', updated_at = ? WHERE source_id = 'file:trunc'",
        [Date.now()],
      );
    await foreignRow();
    // The row stays fresh, as its owner's would, until the reader has said it will not read the
    // file: however long the start takes on a loaded box, its first pass meets a live row.
    let refreshing = true;
    const refresher = (async () => {
      const every = schedule();
      for (let k = 1; refreshing; k++) {
        await every.at(k * 500);
        if (refreshing) await foreignRow();
      }
    })();
    try {
      await start();
      writeTrunc(5000, 5010);
      await eventually(
        async () =>
          /not reading .*trunc\.log: the lock gave fence/.test(scheduler.output())
            ? true
            : undefined,
        60_000,
        'a warning that the claim was refused',
      );
    } finally {
      refreshing = false;
      await refresher;
      await db.end();
    }
    // 3 lease lengths (4.5 s) after the row's last write, the reader takes the file over.
    await expectExactlyOnce(api, 'file:trunc', truncJobs);
    expect(scheduler.output()).toMatch(/took .*trunc\.log over from fence 1000000000 of gone/);
    // A restart, a refused claim and three lease lengths: room for a loaded box.
  }, 180_000);
});
