import { MigrationInterface, QueryRunner, Table, TableColumnOptions, TableIndex } from 'typeorm';

const str = (name: string, length: number, nullable = false): TableColumnOptions => ({
  name,
  type: 'varchar',
  length: String(length),
  isNullable: nullable,
});

/**
 * The outbox of task status changes: one row per change and per consumer that wants it, written
 * in the transaction of the change and deleted once the consumer has handled it.
 */
export class TaskChanges1764200000000 implements MigrationInterface {
  name = 'TaskChanges1764200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'baton_task_change',
        columns: [
          {
            name: 'id',
            // SQLite only auto-increments an INTEGER PRIMARY KEY; MySQL needs BIGINT.
            type: q.connection.driver.options.type === 'mysql' ? 'bigint' : 'integer',
            isPrimary: true,
            isGenerated: true,
            generationStrategy: 'increment',
          },
          str('consumer', 64),
          str('task_id', 32),
          str('task_type', 100),
          str('tenant', 100),
          str('from_status', 16, true),
          str('to_status', 16),
          str('outcome', 16, true),
          { name: 'attempt', type: 'int' },
          { name: 'created_at', type: 'bigint' },
        ],
        indices: [
          new TableIndex({ name: 'ix_task_change_consumer', columnNames: ['consumer', 'id'] }),
        ],
      }),
      true,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('baton_task_change', true);
  }
}
