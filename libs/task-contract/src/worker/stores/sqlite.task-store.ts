import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Clock, systemClock } from '@baton/time';
import { TaskRecord } from '../task-record';
import {
  DEFAULT_RETAIN_ENDED_MS,
  ENDED_STATUSES,
  EndedRetention,
  TaskStore,
} from './task-store.interface';

/** Forgetting old ended tasks runs at most this often. */
const PRUNE_EVERY_MS = 1000;

/**
 * Keeps tasks in an SQLite file, so a worker restart does not turn its tasks into NONE.
 * WAL mode: readers never wait for the writer. Tasks that ended are deleted once older than
 * `retainEndedMs` (see EndedRetention).
 */
export class SqliteTaskStore implements TaskStore {
  private readonly db: Database.Database;
  private readonly getStmt: Database.Statement<[string], { doc: string }>;
  private readonly byNameStmt: Database.Statement<[string, number], { doc: string }>;
  private readonly saveStmt: Database.Statement<[string, string, string, string, number | null]>;
  private readonly pruneStmt: Database.Statement<[number]>;
  private readonly retainMs: number;
  private readonly clock: Clock;
  private prunedAt = 0;

  /** `clock`: when a task ended, and how old it is. Default: systemClock. */
  constructor(path: string, opts: EndedRetention & { clock?: Clock } = {}) {
    this.retainMs = opts.retainEndedMs ?? DEFAULT_RETAIN_ENDED_MS;
    this.clock = opts.clock ?? systemClock;
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS worker_task (
      task_id TEXT PRIMARY KEY,
      task_name TEXT NOT NULL,
      created_at TEXT NOT NULL,
      doc TEXT NOT NULL,
      ended_at INTEGER
    );
    CREATE INDEX IF NOT EXISTS worker_task_name ON worker_task (task_name, created_at);`);
    // A file written before ended tasks were forgotten lacks the column.
    const columns = this.db.prepare('PRAGMA table_info(worker_task)').all() as { name: string }[];
    if (!columns.some((c) => c.name === 'ended_at'))
      this.db.exec('ALTER TABLE worker_task ADD COLUMN ended_at INTEGER');
    this.db.exec(
      'CREATE INDEX IF NOT EXISTS worker_task_ended ON worker_task (ended_at) WHERE ended_at IS NOT NULL',
    );
    this.getStmt = this.db.prepare('SELECT doc FROM worker_task WHERE task_id = ?');
    this.byNameStmt = this.db.prepare(
      'SELECT doc FROM worker_task WHERE task_name = ? ORDER BY created_at DESC LIMIT ?',
    );
    this.saveStmt = this.db.prepare(
      `INSERT INTO worker_task (task_id, task_name, created_at, doc, ended_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(task_id) DO UPDATE SET task_name = excluded.task_name, doc = excluded.doc,
         ended_at = excluded.ended_at`,
    );
    this.pruneStmt = this.db.prepare(
      'DELETE FROM worker_task WHERE ended_at IS NOT NULL AND ended_at < ?',
    );
  }

  async get(taskId: string): Promise<TaskRecord | undefined> {
    const row = this.getStmt.get(taskId);
    return row && (JSON.parse(row.doc) as TaskRecord);
  }

  async findByName(taskName: string, limit: number): Promise<TaskRecord[]> {
    return this.byNameStmt.all(taskName, limit).map((row) => JSON.parse(row.doc) as TaskRecord);
  }

  async save(record: TaskRecord): Promise<void> {
    const now = this.clock.now();
    const ended = ENDED_STATUSES.has(record.status);
    this.saveStmt.run(
      record.task_id,
      record.task_name,
      record.created_at,
      JSON.stringify(record),
      ended ? now : null,
    );
    if (ended && now - this.prunedAt >= PRUNE_EVERY_MS) {
      this.prunedAt = now;
      this.pruneStmt.run(now - this.retainMs);
    }
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
