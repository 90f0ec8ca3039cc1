import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskStatus } from '@baton/task-contract';
import { createLockProvider, LockProvider } from '@baton/locks';
import { DataSource } from 'typeorm';
import { Clock } from '../common';
import { loadSchedulerConfig } from '../config';
import { createDataSource } from '../database';
import {
  TestDatabase,
  mysqlTestDatabase,
  sqliteTestDatabase,
} from '../database/testing/test-databases';
import { ENTITIES } from '../entities';
import { Metrics } from '../metrics';
import { TaskModel } from '../task-store';
import { newTask } from '../task-store/testing/new-task';
import { taskStoreStack } from '../task-store/testing/task-store-stack';
import { TaskTypesService } from '../task-types';
import { taskTypesStack } from '../task-types/testing/save-task-type';
import { RetentionService } from './retention.service';

const DAY = 86_400_000;

describe.each([
  ['sqlite', async () => sqliteTestDatabase()],
  ['mysql', mysqlTestDatabase],
])('retention on %s', (_name, make: () => Promise<TestDatabase>) => {
  let testDb: TestDatabase;
  let ds: DataSource;
  let store: ReturnType<typeof taskStoreStack>;
  let types: ReturnType<typeof taskTypesStack>;
  let locks: LockProvider;
  let exportDir: string;
  const metrics = new Metrics();

  beforeAll(async () => {
    testDb = await make();
    ds = createDataSource(testDb.config, ENTITIES);
    await ds.initialize();
    await ds.runMigrations();
    store = taskStoreStack(ds, metrics);
    types = taskTypesStack(ds);
    locks = createLockProvider({ driver: 'local' });
    exportDir = mkdtempSync(join(tmpdir(), 'baton-purged-'));
  });

  afterAll(async () => {
    await locks?.close();
    await ds?.destroy();
    await testDb?.drop();
    rmSync(exportDir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    for (const table of [
      'baton_task_event',
      'baton_task_attempt',
      'baton_task_label',
      'baton_idempotency',
      'baton_task',
      'baton_task_type',
      'baton_task_count',
    ])
      await store.exec(`DELETE FROM ${table}`);
  });

  function service(env: Record<string, string> = {}): RetentionService {
    const config = loadSchedulerConfig({
      BATON_AUTH_MODE: 'none',
      BATON_RETENTION_PAUSE_MS: '0',
      ...env,
    });
    return new RetentionService(
      store.purge,
      store.history,
      new TaskTypesService(types.repo, new Clock()),
      new Clock(),
      metrics,
      locks,
      config,
    );
  }

  const type = (taskType: string, retentionDays: number | null): Promise<void> =>
    types.save(taskType, { retentionDays });

  /** A task in `status`, finished `daysAgo` days ago (FINISH only), with an attempt, a label and a key. */
  async function stored(
    taskType: string,
    daysAgo: number,
    status = TaskStatus.FINISH,
  ): Promise<TaskModel> {
    const at = Date.now() - daysAgo * DAY;
    const t = newTask({
      taskType,
      status,
      labels: { team: 'db' },
      idempotencyKey: `key-${Math.random().toString(36).slice(2)}`,
      outcome: status === TaskStatus.FINISH ? TaskStatus.SUCCESS : null,
      createdAt: at - 1000,
      updatedAt: at,
      startedAt: at - 500,
      finishedAt: status === TaskStatus.FINISH ? at : null,
      dueAt: status === TaskStatus.FINISH ? null : at,
    });
    await store.tasks.insert(t, 'stored by the test', 'test');
    await store.exec(
      `INSERT INTO baton_task_attempt (task_id, attempt, worker_id, worker_url, fence, started_at, ended_at, outcome, error, drop_due_at, drop_tries, dropped_at)
       VALUES (?, 1, 'w', 'http://w', 1, ?, ?, 'SUCCESS', NULL, NULL, 0, NULL)`,
      [t.taskId, at - 500, at],
    );
    await store.exec(
      `INSERT INTO baton_idempotency (tenant, idempotency_key, request_hash, state, response_status, response_body, created_at)
       VALUES (?, ?, 'h', 'done', 201, '{}', ?)`,
      [t.tenant, t.idempotencyKey, Date.now()],
    );
    return t;
  }

  const count = async (table: string, id: string): Promise<number> =>
    Number(
      (
        (await store.exec(`SELECT COUNT(*) AS n FROM ${table} WHERE task_id = ?`, [id]))
          .records[0] as { n: number | string }
      ).n,
    );
  const keyCount = async (t: TaskModel): Promise<number> =>
    Number(
      (
        (
          await store.exec(
            'SELECT COUNT(*) AS n FROM baton_idempotency WHERE tenant = ? AND idempotency_key = ?',
            [t.tenant, t.idempotencyKey],
          )
        ).records[0] as { n: number | string }
      ).n,
    );
  const gone = async (t: TaskModel): Promise<boolean> =>
    (await store.tasks.findById(t.taskId)) === undefined &&
    (await count('baton_task_event', t.taskId)) === 0 &&
    (await count('baton_task_attempt', t.taskId)) === 0 &&
    (await count('baton_task_label', t.taskId)) === 0 &&
    (await keyCount(t)) === 0;
  const intact = async (t: TaskModel): Promise<boolean> =>
    (await store.tasks.findById(t.taskId)) !== undefined &&
    (await count('baton_task_event', t.taskId)) === 1 &&
    (await count('baton_task_attempt', t.taskId)) === 1 &&
    (await count('baton_task_label', t.taskId)) === 1 &&
    (await keyCount(t)) === 1;

  it('purges finished tasks past the default age with all that goes with them, and nothing younger', async () => {
    await type('demo.echo', null);
    const old = await stored('demo.echo', 31);
    const young = await stored('demo.echo', 29);
    const finished = async () =>
      (await store.counts.totals()).find((c) => c.taskType === 'demo.echo' && c.status === 'FINISH')
        ?.n;
    expect(await finished()).toBe(2);
    const pass = await service().runOnce();
    expect(pass.purged).toBe(1);
    await expect(gone(old)).resolves.toBe(true);
    await expect(intact(young)).resolves.toBe(true);
    // The maintained count of FINISH tasks lost the one purged.
    expect(await finished()).toBe(1);
  });

  it("follows each type's own retention: days, the default, or 0 for forever", async () => {
    await type('short.lived', 1);
    await type('defaulted', null);
    await type('kept', 0);
    const short = await stored('short.lived', 2);
    const shortYoung = await stored('short.lived', 0.5);
    const defaulted = await stored('defaulted', 2);
    const kept = await stored('kept', 400);
    const pass = await service({ BATON_RETENTION_DAYS: '30' }).runOnce();
    expect(pass.purged).toBe(1);
    await expect(gone(short)).resolves.toBe(true);
    for (const t of [shortYoung, defaulted, kept]) await expect(intact(t)).resolves.toBe(true);
  });

  it('never touches a task that is not final, however old', async () => {
    await type('demo.echo', 1);
    const waiting = await stored('demo.echo', 100, TaskStatus.POSTPONE);
    const failed = await stored('demo.echo', 100, TaskStatus.FAIL);
    await expect(service().runOnce()).resolves.toMatchObject({ purged: 0 });
    for (const t of [waiting, failed]) await expect(intact(t)).resolves.toBe(true);
  });

  it('works in batches of BATON_RETENTION_BATCH, each its own short transaction', async () => {
    await type('demo.echo', 1);
    const old = [];
    for (let i = 0; i < 5; i++) old.push(await stored('demo.echo', 3 + i));
    const sizes: number[] = [];
    const purge = store.purge;
    const real = purge.purge.bind(purge);
    purge.purge = async (ids) => {
      sizes.push(ids.length);
      return real(ids);
    };
    try {
      const pass = await service({ BATON_RETENTION_BATCH: '2' }).runOnce();
      expect(pass).toMatchObject({ purged: 5, batches: 3 });
    } finally {
      purge.purge = real;
    }
    expect(sizes).toEqual([2, 2, 1]);
    for (const t of old) await expect(gone(t)).resolves.toBe(true);
  });

  it('writes what it purges to the export file first: the row, its events, attempts and labels', async () => {
    await type('demo.echo', 1);
    const old = await stored('demo.echo', 5);
    await stored('demo.echo', 0);
    await service({ BATON_RETENTION_EXPORT_DIR: exportDir }).runOnce();
    const files = readdirSync(exportDir).filter((f) =>
      /^baton-purged-\d{4}-\d{2}-\d{2}\.jsonl$/.test(f),
    );
    expect(files).toHaveLength(1);
    const lines = readFileSync(join(exportDir, files[0]), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const mine = lines.filter((l) => (l.task as { task_id: string }).task_id === old.taskId);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({
      task: { task_id: old.taskId, task_type: 'demo.echo', status: 'FINISH', outcome: 'SUCCESS' },
      events: [{ task_id: old.taskId, to_status: 'FINISH', reason: 'stored by the test' }],
      attempts: [{ task_id: old.taskId, attempt: 1, worker_id: 'w', outcome: 'SUCCESS' }],
      labels: { team: 'db' },
    });
    await expect(gone(old)).resolves.toBe(true);
  });

  it('sweeps Idempotency-Key records past the default age, task or not', async () => {
    await type('demo.echo', 0);
    const kept = await stored('demo.echo', 0);
    await store.exec(
      `INSERT INTO baton_idempotency (tenant, idempotency_key, request_hash, state, response_status, response_body, created_at)
       VALUES ('default', 'refused-long-ago', 'h', 'in_flight', NULL, NULL, ?)`,
      [Date.now() - 40 * DAY],
    );
    const pass = await service({ BATON_RETENTION_DAYS: '30' }).runOnce();
    expect(pass.idempotencyRecords).toBe(1);
    await expect(intact(kept)).resolves.toBe(true);
  });
});
