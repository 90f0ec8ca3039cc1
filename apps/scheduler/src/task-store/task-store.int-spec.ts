import { systemClock } from '@baton/time';
import { ContractErrorCode, TaskStatus } from '@baton/task-contract';
import { DataSource } from 'typeorm';
import { createDataSource, TransactionRunner } from '../database';
import { ENTITIES } from '../entities';
import {
  TestDatabase,
  mysqlTestDatabase,
  sqliteTestDatabase,
} from '../database/testing/test-databases';
import { Metrics } from '../metrics';
import { GroupCommitWriter } from './group-commit.writer';
import { AttemptDropsRepository } from './attempt-drops.repository';
import { SqlRunner } from './sql-runner';
import { TaskChangeFeed } from './task-change-feed';
import { TaskLogRepository } from './task-log.repository';
import { STORED_JSON_MAX_BYTES } from './task-row.mapping';
import { TasksRepository } from './tasks.repository';
import { TaskModel } from './task.model';
import { newTask } from './testing/new-task';

describe.each([
  ['sqlite', async () => sqliteTestDatabase()],
  ['mysql', mysqlTestDatabase],
])('the task store on %s', (_name, make: () => Promise<TestDatabase>) => {
  let testDb: TestDatabase;
  let ds: DataSource;
  let repo: TasksRepository;
  let log: TaskLogRepository;
  let sql: SqlRunner;
  let writer: GroupCommitWriter;
  const metrics = new Metrics();
  const retries = (): number => metrics.get('baton_group_commit_retries_total');

  beforeAll(async () => {
    testDb = await make();
    ds = createDataSource(testDb.config, ENTITIES);
    await ds.initialize();
    await ds.runMigrations();
    const tx = new TransactionRunner(ds, systemClock);
    sql = new SqlRunner(ds);
    const feed = new TaskChangeFeed(sql, tx);
    log = new TaskLogRepository(ds, sql, feed);
    writer = new GroupCommitWriter(ds, tx, sql, log, metrics);
    repo = new TasksRepository(ds, tx, sql, writer, log);
  });

  afterAll(async () => {
    await ds?.destroy();
    await testDb?.drop();
  });

  it('runs the migrations once: a second run does nothing', async () => {
    await expect(ds.runMigrations()).resolves.toEqual([]);
  });

  it('stores a task with its INIT event and reads it back unchanged', async () => {
    const task = newTask({ labels: { team: 'db', env: 'prod' }, fence: 2 ** 40 });
    await repo.insert(task, 'created by test', 'api');
    await expect(repo.findById(task.taskId)).resolves.toEqual(task);
    const events = await log.events(task.taskId);
    expect(events.map((e) => [e.from, e.to, e.reason, e.actor])).toEqual([
      [null, TaskStatus.INIT, 'created by test', 'api'],
    ]);
  });

  it('starts another writer only for a group worth it: a few changes wait for the commit under way', async () => {
    const tasks = await Promise.all(
      Array.from({ length: 101 }, () => repo.insert(newTask(), 'c', 'api')),
    );
    const tx = (repo as unknown as { tx: TransactionRunner }).tx;
    const queued = writer as unknown as { pending: unknown[]; writers: number };
    const run = tx.run.bind(tx);
    let transactions = 0;
    let active = 0;
    let most = 0;
    // The first transaction of a round waits until the round's changes have all come.
    let gate: Promise<void> = Promise.resolve();
    tx.run = (async (work) => {
      const first = transactions++ === 0;
      most = Math.max(most, ++active);
      try {
        if (first) await gate;
        return await run(work);
      } finally {
        active--;
      }
    }) as TransactionRunner['run'];
    const arrived = async (pending: number, writers: number): Promise<void> => {
      for (let turn = 0; queued.pending.length !== pending || queued.writers !== writers; turn++) {
        if (turn > 50_000) {
          const seen = `${queued.pending.length} waiting, ${queued.writers} writers`;
          throw new Error(`expected ${pending} waiting and ${writers} writers, saw ${seen}`);
        }
        await new Promise((r) => setImmediate(r));
      }
    };
    const round = async (some: TaskModel[], pending: number, writers: number) => {
      transactions = 0;
      most = 0;
      let open!: () => void;
      gate = new Promise((r) => (open = r));
      const all = Promise.all(
        some.map((t) =>
          repo.apply(t, { to: TaskStatus.POSTPONE, reason: 'wait', actor: 's' }, Date.now()),
        ),
      );
      try {
        await arrived(pending, writers);
      } finally {
        open();
      }
      expect((await all).every(Boolean)).toBe(true);
    };
    try {
      // One change alone is written at once; ten that come while it is written wait, then go
      // together (before: a writer each for three of them, as long as one was free).
      await round(tasks.slice(0, 11), 10, 1);
      expect([transactions, most]).toEqual([2, 1]);
      // Ninety: on MySQL a second writer takes 48 at once, the other 41 go next together.
      const mysql = ds.options.type !== 'better-sqlite3';
      await round(tasks.slice(11), mysql ? 41 : 89, mysql ? 2 : 1);
      expect([transactions, most]).toEqual(mysql ? [3, 2] : [2, 1]);
    } finally {
      tx.run = run;
    }
  });

  it('writes changes that arrive together in group commits, each still its own compare-and-set', async () => {
    const tasks = await Promise.all(
      Array.from({ length: 60 }, () => repo.insert(newTask(), 'c', 'api')),
    );
    const tx = (repo as unknown as { tx: TransactionRunner }).tx;
    const run = tx.run.bind(tx);
    let transactions = 0;
    tx.run = ((work) => {
      transactions++;
      return run(work);
    }) as TransactionRunner['run'];
    const now = Date.now();
    try {
      // Two writers per task at one version, and a start with its attempt row.
      const results = await Promise.all(
        tasks.flatMap((t, i) => [
          repo.apply(
            t,
            {
              to: TaskStatus.CREATE,
              patch: { attempt: 1, workerId: `w${i}` },
              attemptStart: {
                attempt: 1,
                workerId: `w${i}`,
                workerUrl: 'http://w',
                fence: 1,
                startedAt: now,
              },
              reason: 'start',
              actor: 's1',
            },
            now,
          ),
          repo.apply(t, { to: TaskStatus.POSTPONE, reason: 'wait', actor: 's2' }, now),
        ]),
      );
      // Fewer commits than changes: they were grouped.
      expect(transactions).toBeLessThan(results.length);
      for (let i = 0; i < tasks.length; i++) {
        const [a, b] = [results[2 * i], results[2 * i + 1]];
        const winner = a ?? b;
        expect([a, b].filter(Boolean)).toHaveLength(1);
        const stored = await repo.findById(tasks[i].taskId);
        expect(stored).toEqual(winner);
        const events = await log.events(tasks[i].taskId);
        expect(events.map((e) => e.to)).toEqual([TaskStatus.INIT, winner?.status]);
        const attempts = await log.attempts(tasks[i].taskId);
        expect(attempts).toHaveLength(a ? 1 : 0);
      }
      // The attempts end together too: each row closed with its own outcome and error.
      const started = results.filter((r): r is TaskModel => r?.status === TaskStatus.CREATE);
      expect(started.length).toBeGreaterThan(1);
      const later = Date.now();
      const ends = await Promise.all(
        started.map((t, k) =>
          repo.apply(
            t,
            {
              to: TaskStatus.FAIL,
              reason: `failed ${k}`,
              actor: 's1',
              attemptEnd: { outcome: TaskStatus.FAIL, error: `error ${k}` },
            },
            later + k,
          ),
        ),
      );
      expect(ends.every(Boolean)).toBe(true);
      for (const [k, t] of started.entries()) {
        const [row] = await log.attempts(t.taskId);
        expect(row).toMatchObject({
          attempt: 1,
          endedAt: later + k,
          outcome: TaskStatus.FAIL,
          error: `error ${k}`,
        });
      }
    } finally {
      tx.run = run;
    }
  });

  it('writes a group of distinct tasks in one UPDATE (MySQL), each row still on its own version', async () => {
    const tasks = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        repo.insert(
          newTask({ workerId: `keep${i}`, progress: { percent: i, step: null, message: null } }),
          'c',
          'api',
        ),
      ),
    );
    const internals = sql as unknown as {
      exec: (m: unknown, sql: string, params: unknown[]) => Promise<unknown>;
    };
    const exec = internals.exec.bind(sql);
    const updates: string[] = [];
    internals.exec = (m, text, params) => {
      if (text.startsWith('UPDATE baton_task SET')) updates.push(text);
      return exec(m, text, params);
    };
    const now = Date.now();
    // Two shapes of change: different columns set, one row with a fence bump.
    const change = (t: TaskModel, i: number): Parameters<TasksRepository['apply']>[1] =>
      i % 2 === 0
        ? { to: TaskStatus.POSTPONE, patch: { dueAt: now + i }, reason: `wait ${i}`, actor: 's' }
        : {
            to: TaskStatus.CREATE,
            patch: { attempt: 1, workerId: `w${i}`, progress: null },
            bumpFence: true,
            reason: `start ${i}`,
            actor: 's',
          };
    const apply = (ts: TaskModel[], stale: number): Promise<(TaskModel | undefined)[]> =>
      Promise.all(
        ts.map((t, i) =>
          repo.apply(i === stale ? { ...t, version: t.version + 3 } : t, change(t, i), now + i),
        ),
      );
    const check = async (ts: TaskModel[], results: (TaskModel | undefined)[], stale: number) => {
      for (const [i, t] of ts.entries()) {
        const stored = await repo.findById(t.taskId);
        if (i === stale) {
          expect(results[i]).toBeUndefined();
          expect(stored).toEqual(t);
          continue;
        }
        expect(stored).toEqual(results[i]);
        expect(stored).toMatchObject(
          i % 2 === 0
            ? {
                status: TaskStatus.POSTPONE,
                dueAt: now + i,
                workerId: t.workerId,
                progress: t.progress,
                fence: t.fence,
              }
            : { status: TaskStatus.CREATE, workerId: `w${i}`, progress: null, fence: t.fence + 1 },
        );
        expect(stored?.version).toBe(t.version + 1);
        expect(stored?.updatedAt).toBe(now + i);
        const events = await log.events(t.taskId);
        expect(events.map((e) => e.reason)).toEqual([
          'c',
          i % 2 === 0 ? `wait ${i}` : `start ${i}`,
        ]);
      }
    };
    try {
      // All at their versions: the grouped ones share a statement.
      const before = retries();
      const first = tasks.slice(0, 20);
      const results = await apply(first, -1);
      await check(first, results, -1);
      // On MySQL only: SQLite's shared connection keeps row-by-row updates (see oneStatement).
      if (_name === 'mysql') expect(updates.length).toBeLessThan(first.length / 2);
      else expect(updates.length).toBe(first.length);
      expect(retries()).toBe(before);
      // One stale: its group is written again row by row, and only that change is refused.
      updates.length = 0;
      const second = tasks.slice(20);
      const mixed = await apply(second, 15);
      await check(second, mixed, 15);
      expect(retries()).toBe(_name === 'mysql' ? before + 1 : before);
      // Large results (over 1 MB in the group): row by row, so no statement nears the packet limit.
      const big = await Promise.all(
        Array.from({ length: 30 }, () => repo.insert(newTask(), 'c', 'api')),
      );
      updates.length = 0;
      const huge = { blob: 'x'.repeat(40_000) };
      const written = await Promise.all(
        big.map((t) =>
          repo.apply(
            t,
            { to: TaskStatus.POSTPONE, patch: { result: huge }, reason: 'big', actor: 's' },
            now,
          ),
        ),
      );
      expect(written.every(Boolean)).toBe(true);
      expect(updates).toHaveLength(big.length);
      for (const t of big) expect((await repo.findById(t.taskId))?.result).toEqual(huge);
    } finally {
      internals.exec = exec;
    }
  });

  it('keeps a worker result, error or progress over the size limit as a stand-in that says so', async () => {
    const task = await repo.insert(newTask(), 'c', 'api');
    const now = Date.now();
    const huge = 'y'.repeat(STORED_JSON_MAX_BYTES * 3);
    const next = await repo.apply(
      task,
      {
        to: TaskStatus.POSTPONE,
        patch: {
          result: { blob: huge },
          error: { message: huge, code: 'big' },
          progress: { percent: 40, step: 'copy', message: huge },
        },
        reason: 'big',
        actor: 's',
      },
      now,
    );
    expect(next).toBeDefined();
    const stored = (await repo.findById(task.taskId)) as TaskModel;
    expect(stored.status).toBe(TaskStatus.POSTPONE);
    const bytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v));
    expect(stored.result).toMatchObject({ truncated: bytes({ blob: huge }) });
    expect(String(stored.result?.head)).toMatch(/^\{"blob":"yyy/);
    expect(stored.error).toMatchObject({ code: 'big', truncated: expect.any(Number) });
    expect(stored.error?.message.length).toBeLessThanOrEqual(2000);
    expect(stored.progress).toMatchObject({ percent: 40, step: 'copy' });
    for (const v of [stored.result, stored.error, stored.progress])
      expect(bytes(v)).toBeLessThan(STORED_JSON_MAX_BYTES);
    // Under the limit: kept as it is.
    const small = { blob: 'z'.repeat(1000) };
    const again = await repo.apply(
      stored,
      { patch: { result: small }, reason: 'small', actor: 's' },
      now + 1,
    );
    expect(again).toBeDefined();
    expect((await repo.findById(task.taskId))?.result).toEqual(small);
  });

  it('fails only the change that fails in a group: the others are written', async () => {
    const tasks = await Promise.all(
      Array.from({ length: 20 }, () => repo.insert(newTask(), 'c', 'api')),
    );
    const now = Date.now();
    // The bad one opens an attempt row that exists already (unique task_id + attempt).
    const bad = tasks[7];
    await repo.apply(
      bad,
      {
        to: TaskStatus.CREATE,
        patch: { attempt: 1 },
        attemptStart: {
          attempt: 1,
          workerId: 'w',
          workerUrl: 'http://w',
          fence: 1,
          startedAt: now,
        },
        reason: 'first',
        actor: 's',
      },
      now,
    );
    const badNow = (await repo.findById(bad.taskId)) as TaskModel;
    const settled = await Promise.allSettled(
      tasks.map((t) =>
        t === bad
          ? repo.apply(
              { ...badNow, attempt: 0 },
              {
                patch: { attempt: 1 },
                attemptStart: {
                  attempt: 1,
                  workerId: 'w',
                  workerUrl: 'http://w',
                  fence: 1,
                  startedAt: now,
                },
                reason: 'again',
                actor: 's',
              },
              now,
            )
          : repo.apply(t, { to: TaskStatus.POSTPONE, reason: 'wait', actor: 's' }, now),
      ),
    );
    expect(settled.filter((r) => r.status === 'rejected')).toHaveLength(1);
    expect(settled[7].status).toBe('rejected');
    for (const t of tasks.filter((x) => x !== bad))
      expect((await repo.findById(t.taskId))?.status).toBe(TaskStatus.POSTPONE);
    // Nothing of the failed change was kept.
    expect(await repo.findById(bad.taskId)).toEqual(badNow);
  });

  it('applies a change as compare-and-set: of two writers at one version, one wins', async () => {
    const task = await repo.insert(newTask(), 'c', 'api');
    const now = Date.now();
    const [a, b] = await Promise.all([
      repo.apply(
        task,
        {
          to: TaskStatus.CREATE,
          patch: { attempt: 1, workerUrl: 'http://a' },
          reason: 'a',
          actor: 's1',
          bumpFence: true,
        },
        now,
      ),
      repo.apply(task, { to: TaskStatus.POSTPONE, reason: 'b', actor: 's2' }, now),
    ]);
    const winners = [a, b].filter(Boolean);
    expect(winners).toHaveLength(1);
    const stored = await repo.findById(task.taskId);
    expect(stored).toEqual(winners[0]);
    expect(stored?.version).toBe(1);
    const events = await log.events(task.taskId);
    expect(events).toHaveLength(2);
    expect(events[1].to).toBe(stored?.status);
  });

  it('writes patches through the JSON and bigint columns, and bumps the fence on a claim', async () => {
    const task = await repo.insert(newTask(), 'c', 'api');
    const next = await repo.apply(
      task,
      {
        patch: {
          owner: 'me',
          leaseUntil: 2 ** 41,
          result: { x: [1, { y: 'z' }] },
          error: { message: 'm', code: 'c' },
        },
        reason: 'claim',
        actor: 'me',
        bumpFence: true,
      },
      Date.now(),
    );
    expect(next?.fence).toBe(1);
    const stored = await repo.findById(task.taskId);
    expect(stored).toMatchObject({
      owner: 'me',
      leaseUntil: 2 ** 41,
      result: { x: [1, { y: 'z' }] },
      error: { message: 'm', code: 'c' },
      fence: 1,
      status: TaskStatus.INIT,
    });
    // a change of fields only writes no event
    expect(await log.events(task.taskId)).toHaveLength(1);
  });

  it('refuses a move the transition table forbids, writing nothing', async () => {
    const task = await repo.insert(newTask(), 'c', 'api');
    await expect(
      repo.apply(task, { to: TaskStatus.SUCCESS, reason: 'x', actor: 'y' }, Date.now()),
    ).rejects.toMatchObject({ code: ContractErrorCode.ILLEGAL_TRANSITION });
    expect((await repo.findById(task.taskId))?.version).toBe(0);
  });

  it('lists due tasks whose claim is free, earliest first', async () => {
    const now = Date.now() + 10_000_000; // past every other test's due times? no: in the future of them
    const early = await repo.insert(newTask({ dueAt: now - 50 }), 'c', 'api');
    const late = await repo.insert(newTask({ dueAt: now - 10 }), 'c', 'api');
    const future = await repo.insert(newTask({ dueAt: now + 1000 }), 'c', 'api');
    const held = await repo.insert(
      newTask({ dueAt: now - 40, owner: 'x', leaseUntil: now + 5000 }),
      'c',
      'api',
    );
    const lapsed = await repo.insert(
      newTask({ dueAt: now - 30, owner: 'x', leaseUntil: now - 1 }),
      'c',
      'api',
    );
    const due = (await repo.due(now, [TaskStatus.INIT], 1000)).map((d) => d.taskId);
    const ours = due.filter((id) =>
      [early, late, future, held, lapsed].some((t) => t.taskId === id),
    );
    expect(ours).toEqual([early.taskId, lapsed.taskId, late.taskId]);
  });

  it('filters the list by type, status, tenant and label, newest first, with a cursor', async () => {
    const tenant = `t${newTask().taskId}`;
    const a = await repo.insert(newTask({ tenant, labels: { team: 'db' } }), 'c', 'api');
    const b = await repo.insert(
      newTask({ tenant, labels: { team: 'web' }, taskType: 'demo.sleep' }),
      'c',
      'api',
    );
    const c = await repo.insert(newTask({ tenant, labels: { team: 'db' } }), 'c', 'api');
    expect((await repo.list({ tenant }, undefined, 10)).map((t) => t.taskId)).toEqual([
      c.taskId,
      b.taskId,
      a.taskId,
    ]);
    expect(
      (await repo.list({ tenant, label: { key: 'team', value: 'db' } }, undefined, 10)).map(
        (t) => t.taskId,
      ),
    ).toEqual([c.taskId, a.taskId]);
    expect(
      (await repo.list({ tenant, taskType: 'demo.sleep' }, undefined, 10)).map((t) => t.taskId),
    ).toEqual([b.taskId]);
    expect((await repo.list({ tenant }, c.taskId, 1)).map((t) => t.taskId)).toEqual([b.taskId]);
    expect(await repo.list({ tenant, status: [TaskStatus.FINISH] }, undefined, 10)).toEqual([]);
  });

  it('refuses a second task with the same idempotency key in a tenant', async () => {
    const key = `key-${newTask().taskId}`;
    const first = await repo.insert(newTask({ idempotencyKey: key }), 'c', 'api');
    await expect(repo.insert(newTask({ idempotencyKey: key }), 'c', 'api')).rejects.toMatchObject({
      code: ContractErrorCode.CREATE_CONFLICT,
    });
    await expect(repo.findByIdempotencyKey('default', key)).resolves.toMatchObject({
      taskId: first.taskId,
    });
    await expect(
      repo.insert(newTask({ idempotencyKey: key, tenant: 'other' }), 'c', 'api'),
    ).resolves.toBeDefined();
  });

  it('opens an attempt row with the move that starts it, once per attempt (a re-drive updates it)', async () => {
    const task = await repo.insert(newTask(), 'c', 'api');
    const created = await repo.apply(
      task,
      {
        to: TaskStatus.CREATE,
        patch: { attempt: 1 },
        attemptStart: {
          attempt: 1,
          workerId: 'w1',
          workerUrl: 'http://w1',
          fence: 3,
          startedAt: 10,
        },
        reason: 'create',
        actor: 's1',
      },
      Date.now(),
    );
    expect(created).toBeDefined();
    // After a crash, the same attempt is driven again on another worker: same row, new worker.
    const redriven = await repo.apply(
      created!,
      {
        to: TaskStatus.CREATE,
        attemptStart: {
          attempt: 1,
          workerId: 'w2',
          workerUrl: 'http://w2',
          fence: 4,
          startedAt: 11,
        },
        reason: 're-drive',
        actor: 's2',
      },
      Date.now(),
    );
    expect(redriven).toBeDefined();
    // Leaving CREATE ends the attempt, in the same write.
    await repo.apply(
      redriven!,
      {
        to: TaskStatus.FAIL,
        attemptEnd: { outcome: TaskStatus.FAIL, error: 'boom' },
        reason: 'x',
        actor: 's2',
      },
      20,
    );
    expect(await log.attempts(task.taskId)).toEqual([
      {
        taskId: task.taskId,
        attempt: 1,
        workerId: 'w2',
        workerUrl: 'http://w2',
        fence: 4,
        startedAt: 10,
        endedAt: 20,
        outcome: TaskStatus.FAIL,
        error: 'boom',
        drop: null,
        droppedAt: null,
      },
    ]);
  });

  it('marks an attempt given up for its worker to drop, in the write that ends it; one sender claims it', async () => {
    const drops = new AttemptDropsRepository(sql);
    const task = await repo.insert(newTask({ taskType: 'demo.drop' }), 'c', 'api');
    const created = await repo.apply(
      task,
      {
        to: TaskStatus.CREATE,
        patch: { attempt: 1 },
        attemptStart: {
          attempt: 1,
          workerId: 'w1',
          workerUrl: 'http://w1',
          fence: 7,
          startedAt: 10,
        },
        reason: 'create',
        actor: 's1',
      },
      10,
    );
    const moved = await repo.apply(
      created!,
      {
        to: TaskStatus.POSTPONE,
        patch: { moves: 1 },
        attemptEnd: { outcome: TaskStatus.POSTPONE, error: 'refused', drop: true },
        reason: 'moved',
        actor: 's1',
      },
      20,
    );
    expect(moved?.moves).toBe(1);
    expect((await repo.findById(task.taskId))?.moves).toBe(1);
    expect(await log.attempts(task.taskId)).toMatchObject([
      { attempt: 1, outcome: TaskStatus.POSTPONE, drop: 'pending', droppedAt: null },
    ]);
    const due = (await drops.due(25, 100)).filter((d) => d.taskId === task.taskId);
    expect(due).toEqual([
      expect.objectContaining({
        taskType: 'demo.drop',
        attempt: 1,
        workerUrl: 'http://w1',
        fence: 7,
        tries: 0,
        endedAt: 20,
      }),
    ]);
    // Not due before the attempt ended; two senders: one claim wins.
    expect((await drops.due(19, 100)).some((d) => d.taskId === task.taskId)).toBe(false);
    expect(await drops.claim(due[0], 1000)).toBe(true);
    expect(await drops.claim(due[0], 1000)).toBe(false);
    expect((await drops.due(999, 100)).some((d) => d.taskId === task.taskId)).toBe(false);
    await drops.later({ ...due[0], dueAt: 1000 }, 2000);
    const again = (await drops.due(2000, 100)).find((d) => d.taskId === task.taskId);
    expect(again).toMatchObject({ tries: 1, dueAt: 2000 });
    await drops.done(again!, 2100);
    expect((await drops.due(10 ** 13, 100)).some((d) => d.taskId === task.taskId)).toBe(false);
    expect(await log.attempts(task.taskId)).toMatchObject([{ drop: 'done', droppedAt: 2100 }]);
  });

  it('records a heartbeat of the running attempt without moving the version', async () => {
    const task = newTask({ status: TaskStatus.RUNNING, attempt: 2 });
    await repo.insert(task, 'created', 'test');
    const progress = { percent: 40, step: 'copy', message: null };
    expect(await repo.recordBeat(task.taskId, 2, 1234, progress)).toBe(true);
    const after = await repo.findById(task.taskId);
    expect(after).toMatchObject({ version: task.version, heartbeatAt: 1234, progress });
    // Another attempt's beat, or a beat after the task stopped running, records nothing.
    expect(await repo.recordBeat(task.taskId, 1, 2000)).toBe(false);
    const done = await repo.apply(
      after!,
      { to: TaskStatus.SUCCESS, reason: 'ok', actor: 't' },
      3000,
    );
    expect(await repo.recordBeat(task.taskId, 2, 4000)).toBe(false);
    expect((await repo.findById(task.taskId))?.heartbeatAt).toBe(1234);
    expect(done?.status).toBe(TaskStatus.SUCCESS);
  });

  it('records a cancel of the running attempt although polls claimed it since it was read; once', async () => {
    const task = newTask({ status: TaskStatus.RUNNING, attempt: 3, dueAt: 1000 });
    await repo.insert(task, 'created', 'test');
    // Read by the cancel; then two status polls claim the run, each with a new fence.
    const read = (await repo.findById(task.taskId))!;
    for (const at of [2000, 3000]) {
      await repo.claimMany([task.taskId], 's1', at, at + 500, [TaskStatus.RUNNING], at);
    }
    const polled = (await repo.findById(task.taskId))!;
    expect(polled.fence).toBe(read.fence + 2);
    const cancel = (now: number) =>
      repo.requestCancel(task.taskId, read.attempt, 'api', 'cancel requested', now);
    // The worker is to be told with the fence the polls reached, not the one read.
    expect(await cancel(4000)).toEqual({ outcome: 'recorded', fence: polled.fence });
    expect(await cancel(4001)).toEqual({ outcome: 'already', fence: polled.fence });
    const after = (await repo.findById(task.taskId))!;
    expect(after).toMatchObject({ cancelRequested: true, version: polled.version });
    const notes = (await log.events(task.taskId)).filter((e) => e.reason === 'cancel requested');
    expect(notes).toHaveLength(1);
    // Another attempt, or a run that ended: changed.
    expect(await repo.requestCancel(task.taskId, 2, 'api', 'x', 5000)).toEqual({
      outcome: 'changed',
    });
    await repo.apply(after, { to: TaskStatus.FAIL, reason: 'stopped', actor: 't' }, 6000);
    expect(await cancel(7000)).toEqual({ outcome: 'changed' });
  });

  it('finds the task that holds a lock key by its state, matching keys exactly', async () => {
    const running = newTask({ status: TaskStatus.RUNNING, lockKeys: ['db_1', 'disk-9'] });
    const waiting = newTask({ status: TaskStatus.POSTPONE, lockKeys: ['dbx1'] });
    const retrying = newTask({ status: TaskStatus.FAIL, outcome: null, lockKeys: ['dbx1'] });
    const lookalike = newTask({ status: TaskStatus.PAUSE, lockKeys: ['dbx1'] });
    for (const t of [running, waiting, retrying]) await repo.insert(t, 'created', 'test');
    expect(await repo.lockKeyHolder(['db_1'], 'other')).toBe(running.taskId);
    expect(await repo.lockKeyHolder(['x', 'disk-9'], 'other')).toBe(running.taskId);
    // '_' is no wildcard; a waiting or retrying task holds nothing; a task never blocks itself.
    expect(await repo.lockKeyHolder(['dbx1'], 'other')).toBeUndefined();
    expect(await repo.lockKeyHolder(['db_1'], running.taskId)).toBeUndefined();
    await repo.insert(lookalike, 'created', 'test');
    expect(await repo.lockKeyHolder(['dbx1'], 'other')).toBe(lookalike.taskId);
    expect(await repo.lockKeyHolder(['db_1'], running.taskId)).toBeUndefined();
    // A PAUSE holds only when it was paused in the middle of an attempt.
    for (const from of [TaskStatus.INIT, TaskStatus.POSTPONE])
      await repo.insert(
        newTask({ status: TaskStatus.PAUSE, pausedFrom: from, lockKeys: [`early-${from}`] }),
        'created',
        'test',
      );
    expect(await repo.lockKeyHolder(['early-INIT', 'early-POSTPONE'], 'other')).toBeUndefined();
    const mid = newTask({
      status: TaskStatus.PAUSE,
      pausedFrom: TaskStatus.RUNNING,
      lockKeys: ['mid'],
    });
    await repo.insert(mid, 'created', 'test');
    expect(await repo.lockKeyHolder(['mid'], 'other')).toBe(mid.taskId);
    // Keys differ by case: `Disk-A` is not `disk-a` (SQLite's LIKE would have matched them).
    const upper = newTask({ status: TaskStatus.RUNNING, lockKeys: ['Disk-A'] });
    await repo.insert(upper, 'created', 'test');
    expect(await repo.lockKeyHolder(['disk-a'], 'other')).toBeUndefined();
    expect(await repo.lockKeyHolder(['Disk-A'], 'other')).toBe(upper.taskId);
  });

  it('finds a task whose given-up attempt a live worker is still owed a drop of', async () => {
    const now = 1_800_000_000_000;
    const worker = (id: string, heartbeatAt: number): Record<string, unknown> => ({
      worker_id: id,
      url: `http://${id}`,
      task_types: '["demo.echo"]',
      version: '1',
      contract_version: '1.1.0',
      capacity: 1,
      last_heartbeat_at: heartbeatAt,
      consecutive_failures: 0,
      registered_at: heartbeatAt,
    });
    await sql.insertRows(ds.manager, 'baton_worker', [
      worker('drop-live', now - 1000),
      worker('drop-gone', now - 60_000),
    ]);
    // A task whose attempt 1 went to `workerId` and was given up (owed a drop): it waits again.
    const givenUp = async (key: string, workerId: string): Promise<TaskModel> => {
      const t = newTask({ status: TaskStatus.POSTPONE, lockKeys: [key] });
      await repo.insert(t, 'created', 'test');
      const bound = (await repo.apply(
        t,
        {
          to: TaskStatus.CREATE,
          patch: { attempt: 1, workerId },
          attemptStart: {
            attempt: 1,
            workerId,
            workerUrl: `http://${workerId}`,
            fence: 1,
            startedAt: now,
          },
          reason: 'attempt 1',
          actor: 's1',
        },
        now,
      ))!;
      return (await repo.apply(
        bound,
        {
          to: TaskStatus.POSTPONE,
          attemptEnd: { outcome: TaskStatus.POSTPONE, error: 'given up', drop: true },
          reason: 'given up',
          actor: 's2',
        },
        now,
      ))!;
    };
    const onLive = await givenUp('owed_live', 'drop-live');
    const onGone = await givenUp('owed-gone', 'drop-gone');
    const liveSince = now - 30_000;
    // The live worker may still run it: the key is held. Not by its state alone, nor for itself.
    expect(await repo.lockKeyHolder(['owed_live'], 'other', liveSince)).toBe(onLive.taskId);
    expect(await repo.lockKeyHolder(['x', 'owed_live'], 'other', liveSince)).toBe(onLive.taskId);
    // Keys match exactly: '_' is no wildcard.
    expect(await repo.lockKeyHolder(['owedXlive', 'x'], 'other', liveSince)).toBeUndefined();
    expect(await repo.lockKeyHolder(['owed_live'], 'other')).toBeUndefined();
    expect(await repo.lockKeyHolder(['owed_live'], onLive.taskId, liveSince)).toBeUndefined();
    // A worker not heard from since `liveSince` holds nothing.
    expect(await repo.lockKeyHolder(['owed-gone'], 'other', liveSince)).toBeUndefined();
    // Once the worker was told, the key is free.
    const drops = new AttemptDropsRepository(sql);
    const owed = (await drops.due(Number.MAX_SAFE_INTEGER, 1000)).find(
      (d) => d.taskId === onLive.taskId,
    );
    expect(owed).toBeDefined();
    // Being sent (claimed by an instance until a moment ahead): still owed.
    expect(await drops.claim(owed!, now + 30_000)).toBe(true);
    expect(await repo.lockKeyHolder(['owed_live'], 'other', liveSince)).toBe(onLive.taskId);
    await drops.done({ ...owed!, dueAt: now + 30_000 }, now + 1);
    expect(await repo.lockKeyHolder(['owed_live'], 'other', liveSince)).toBeUndefined();
    expect(onGone.status).toBe(TaskStatus.POSTPONE);
  });
});
