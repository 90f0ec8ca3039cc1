import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { TaskRecord } from '../task-record';
import { TaskStore } from './task-store.interface';

/**
 * Keeps tasks in an SQLite file, so a worker restart does not turn its tasks into NONE.
 * WAL mode: readers never wait for the writer.
 */
export class SqliteTaskStore implements TaskStore {
  private readonly db: Database.Database;
  private readonly getStmt: Database.Statement<[string], { doc: string }>;
  private readonly byNameStmt: Database.Statement<[string, number], { doc: string }>;
  private readonly saveStmt: Database.Statement<[string, string, string, string]>;

  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS worker_task (
      task_id TEXT PRIMARY KEY,
      task_name TEXT NOT NULL,
      created_at TEXT NOT NULL,
      doc TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS worker_task_name ON worker_task (task_name, created_at);`);
    this.getStmt = this.db.prepare('SELECT doc FROM worker_task WHERE task_id = ?');
    this.byNameStmt = this.db.prepare(
      'SELECT doc FROM worker_task WHERE task_name = ? ORDER BY created_at DESC LIMIT ?',
    );
    this.saveStmt = this.db.prepare(
      `INSERT INTO worker_task (task_id, task_name, created_at, doc) VALUES (?, ?, ?, ?)
       ON CONFLICT(task_id) DO UPDATE SET task_name = excluded.task_name, doc = excluded.doc`,
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
    this.saveStmt.run(record.task_id, record.task_name, record.created_at, JSON.stringify(record));
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
