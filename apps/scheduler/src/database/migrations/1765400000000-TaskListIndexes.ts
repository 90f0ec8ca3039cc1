import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

/**
 * Indexes for the task list's filters and sorts, each ending in the id so that "this filter,
 * newest first" reads the index in order and stops at the page's end. On InnoDB a secondary
 * index carries the primary key anyway; on SQLite it carries the rowid, so the id is named.
 */
const INDEXES: readonly [string, string[]][] = [
  ['ix_task_parent', ['parent_task_id', 'task_id']],
  ['ix_task_control', ['control_task_id', 'task_id']],
  ['ix_task_worker', ['worker_id', 'task_id']],
  ['ix_task_outcome', ['outcome', 'task_id']],
  ['ix_task_attempt', ['attempt', 'task_id']],
  ['ix_task_name', ['task_name', 'task_id']],
  ['ix_task_updated', ['updated_at', 'task_id']],
  ['ix_task_priority', ['priority', 'task_id']],
];

/**
 * The task list's filters (parent, control task, worker, outcome, attempts, name prefix), sorts
 * (updated, priority) and full-text search on names.
 *
 * The name search: on MariaDB/MySQL a FULLTEXT index over `name_words`, a stored copy of the name
 * in a collation that ignores case and accents (names themselves compare exactly, see
 * ExactIdentifiers); adding it rebuilds the table once. On SQLite an FTS5 index over the names
 * (external content: it keeps no copy of them) that triggers keep in step with every insert,
 * delete and rename. It is keyed by the table's rowid, which a `VACUUM` may renumber: after one,
 * `INSERT INTO baton_task_name_fts(baton_task_name_fts) VALUES ('rebuild')` makes it again.
 */
export class TaskListIndexes1765400000000 implements MigrationInterface {
  name = 'TaskListIndexes1765400000000';

  async up(q: QueryRunner): Promise<void> {
    for (const [name, columnNames] of INDEXES)
      await q.createIndex('baton_task', new TableIndex({ name, columnNames }));
    if (q.connection.options.type === 'mysql') {
      const [{ collation }] = (await q.query(
        "SELECT collation_name AS collation FROM information_schema.collations WHERE collation_name IN ('utf8mb4_uca1400_ai_ci', 'utf8mb4_unicode_520_ci', 'utf8mb4_general_ci') ORDER BY FIELD(collation_name, 'utf8mb4_uca1400_ai_ci', 'utf8mb4_unicode_520_ci', 'utf8mb4_general_ci') LIMIT 1",
      )) as { collation: string }[];
      await q.query(
        `ALTER TABLE baton_task ADD COLUMN name_words VARCHAR(200) CHARACTER SET utf8mb4 COLLATE ${collation} AS (task_name) STORED, ADD FULLTEXT INDEX ft_task_name (name_words)`,
      );
      return;
    }
    await q.query(
      "CREATE VIRTUAL TABLE baton_task_name_fts USING fts5(task_name, content='baton_task', content_rowid='rowid', tokenize=\"unicode61 remove_diacritics 2 tokenchars '_'\")",
    );
    await q.query(
      `CREATE TRIGGER baton_task_name_fts_insert AFTER INSERT ON baton_task BEGIN
         INSERT INTO baton_task_name_fts (rowid, task_name) VALUES (new.rowid, new.task_name);
       END`,
    );
    await q.query(
      `CREATE TRIGGER baton_task_name_fts_delete AFTER DELETE ON baton_task BEGIN
         INSERT INTO baton_task_name_fts (baton_task_name_fts, rowid, task_name) VALUES ('delete', old.rowid, old.task_name);
       END`,
    );
    await q.query(
      `CREATE TRIGGER baton_task_name_fts_rename AFTER UPDATE OF task_name ON baton_task BEGIN
         INSERT INTO baton_task_name_fts (baton_task_name_fts, rowid, task_name) VALUES ('delete', old.rowid, old.task_name);
         INSERT INTO baton_task_name_fts (rowid, task_name) VALUES (new.rowid, new.task_name);
       END`,
    );
    await q.query("INSERT INTO baton_task_name_fts (baton_task_name_fts) VALUES ('rebuild')");
  }

  async down(q: QueryRunner): Promise<void> {
    if (q.connection.options.type === 'mysql') {
      await q.query('ALTER TABLE baton_task DROP INDEX ft_task_name, DROP COLUMN name_words');
    } else {
      for (const t of ['insert', 'delete', 'rename'])
        await q.query(`DROP TRIGGER IF EXISTS baton_task_name_fts_${t}`);
      await q.query('DROP TABLE IF EXISTS baton_task_name_fts');
    }
    for (const [name] of [...INDEXES].reverse()) await q.dropIndex('baton_task', name);
  }
}
