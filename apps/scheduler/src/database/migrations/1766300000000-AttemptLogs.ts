import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/** What workers log per attempt of a task, and each attempt's use of its cap. */
export class AttemptLogs1766300000000 implements MigrationInterface {
  name = 'AttemptLogs1766300000000';

  async up(q: QueryRunner): Promise<void> {
    const mysql = q.connection.driver.options.type === 'mysql';
    await q.createTable(
      new Table({
        name: 'baton_task_log_line',
        columns: [
          {
            // SQLite only auto-increments an INTEGER PRIMARY KEY (64-bit there).
            name: 'id',
            type: mysql ? 'bigint' : 'integer',
            isPrimary: true,
            isGenerated: true,
            generationStrategy: 'increment',
          },
          { name: 'task_id', type: 'varchar', length: '32' },
          { name: 'attempt', type: 'int' },
          { name: 'seq', type: 'int' },
          { name: 'at', type: 'bigint' },
          { name: 'level', type: 'varchar', length: '8' },
          { name: 'message', type: 'varchar', length: '4000' },
          { name: 'fields', type: 'text', isNullable: true },
          { name: 'bytes', type: 'int' },
        ],
        indices: [
          new TableIndex({
            name: 'ux_task_log_line',
            columnNames: ['task_id', 'attempt', 'seq'],
            isUnique: true,
          }),
        ],
      }),
      true,
    );
    await q.createTable(
      new Table({
        name: 'baton_task_log_usage',
        columns: [
          { name: 'task_id', type: 'varchar', length: '32', isPrimary: true },
          { name: 'attempt', type: 'int', isPrimary: true },
          { name: 'line_count', type: 'int' },
          { name: 'byte_count', type: 'bigint' },
          { name: 'dropped', type: 'int' },
        ],
      }),
      true,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('baton_task_log_usage', true);
    await q.dropTable('baton_task_log_line', true);
  }
}
