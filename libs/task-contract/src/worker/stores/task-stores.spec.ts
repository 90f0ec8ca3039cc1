import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '@baton/time';
import { TaskStatus } from '../../enums/task-status.enum';
import { TaskRecord } from '../task-record';
import { MemoryTaskStore } from './memory.task-store';
import { SqliteTaskStore } from './sqlite.task-store';
import { TaskStore } from './task-store.interface';

function record(taskId: string, status: TaskStatus): TaskRecord {
  const at = new Date(0).toISOString();
  return {
    task_id: taskId,
    task_type: 'demo.echo',
    task_name: 'n',
    status,
    attempt: 1,
    fence: 1,
    create_info: { task_type: 'demo.echo', task_name: 'n' },
    process_arg: {},
    params: { a: 1 },
    lock_keys: [],
    progress: { percent: 0, step: null, message: null, updated_at: at },
    heartbeat_at: null,
    result: null,
    error: null,
    paused_from: null,
    created_at: at,
    updated_at: at,
  };
}

describe.each<[string, (dir: string, clock: ManualClock) => TaskStore]>([
  ['memory', (_dir, clock) => new MemoryTaskStore({ retainEndedMs: 60_000, clock })],
  [
    'sqlite',
    (dir, clock) =>
      new SqliteTaskStore(join(dir, 'tasks.sqlite'), { retainEndedMs: 60_000, clock }),
  ],
])('%s task store retention', (_name, make) => {
  let dir: string;
  let clock: ManualClock;
  let store: TaskStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'baton-store-'));
    clock = new ManualClock(1_000_000);
    store = make(dir, clock);
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('forgets an ended task after the retention, and never a task that has not ended', async () => {
    await store.save(record('running', TaskStatus.RUNNING));
    await store.save(record('paused', TaskStatus.PAUSE));
    await store.save(record('failed', TaskStatus.FAIL));
    await store.save(record('done', TaskStatus.FINISH));
    await clock.advance(30_000);
    await store.save(record('done-later', TaskStatus.FINISH));
    expect(await store.get('done')).toMatchObject({ status: TaskStatus.FINISH });
    // Past the first one's retention (and the prune interval), not the second one's.
    await clock.advance(40_000);
    await store.save(record('trigger', TaskStatus.FINISH));
    expect(await store.get('done')).toBeUndefined();
    expect(await store.get('done-later')).toMatchObject({ status: TaskStatus.FINISH });
    expect(await store.get('running')).toMatchObject({ status: TaskStatus.RUNNING });
    expect(await store.get('failed')).toBeUndefined();
    expect(await store.get('paused')).toMatchObject({ status: TaskStatus.PAUSE });
    // Long after: the ones that have not ended are still there.
    await clock.advance(10 * 3_600_000);
    await store.save(record('trigger-2', TaskStatus.FINISH));
    expect(await store.get('done-later')).toBeUndefined();
    expect(await store.get('running')).toBeDefined();
    expect(await store.get('paused')).toBeDefined();
  });

  it('counts the retention from when a task ended, not from when it was created', async () => {
    await store.save(record('old', TaskStatus.RUNNING));
    await clock.advance(10 * 3_600_000);
    await store.save(record('old', TaskStatus.FINISH));
    await clock.advance(2000);
    await store.save(record('trigger', TaskStatus.FINISH));
    expect(await store.get('old')).toMatchObject({ status: TaskStatus.FINISH });
  });
});

describe('memory task store', () => {
  it('keeps at most maxEnded ended tasks, dropping the oldest first', async () => {
    const store = new MemoryTaskStore({ maxEnded: 2 });
    await store.save(record('running', TaskStatus.RUNNING));
    for (const id of ['a', 'b', 'c']) await store.save(record(id, TaskStatus.FINISH));
    expect(await store.get('a')).toBeUndefined();
    expect(await store.get('b')).toBeDefined();
    expect(await store.get('c')).toBeDefined();
    expect(await store.get('running')).toBeDefined();
    expect(store.size).toBe(3);
  });
});

describe('sqlite task store', () => {
  it('opens a file written before retention existed, keeping its tasks', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-store-'));
    const path = join(dir, 'old.sqlite');
    try {
      const old = new Database(path);
      old.exec(`CREATE TABLE worker_task (task_id TEXT PRIMARY KEY, task_name TEXT NOT NULL,
        created_at TEXT NOT NULL, doc TEXT NOT NULL)`);
      old
        .prepare('INSERT INTO worker_task VALUES (?, ?, ?, ?)')
        .run('kept', 'n', 'x', JSON.stringify(record('kept', TaskStatus.FINISH)));
      old.close();
      const store = new SqliteTaskStore(path, { retainEndedMs: 0 });
      await store.save(record('new', TaskStatus.FINISH));
      // A row from before has no end time: it is not forgotten by age.
      expect(await store.get('kept')).toMatchObject({ task_id: 'kept' });
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
