import { MigrationInterface, QueryRunner, Table } from 'typeorm';

/**
 * Tasks by type and status, kept with every change (`baton_tasks` on `/metrics`, the overview's
 * counts) so that nobody counts the task table to know them. A count is the sum of its shards:
 * writers add to a shard of their choice, so concurrent transactions rarely wait on one row.
 * Filled here from the tasks already stored.
 */
export class TaskCounts1765200000000 implements MigrationInterface {
  name = 'TaskCounts1765200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'baton_task_count',
        columns: [
          { name: 'shard', type: 'int', isPrimary: true },
          { name: 'task_type', type: 'varchar', length: '100', isPrimary: true },
          { name: 'status', type: 'varchar', length: '16', isPrimary: true },
          { name: 'n', type: 'bigint', isNullable: false, default: 0 },
        ],
      }),
      true,
    );
    await q.query(
      `INSERT INTO baton_task_count (shard, task_type, status, n)
       SELECT 0, task_type, status, COUNT(*) FROM baton_task GROUP BY task_type, status`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('baton_task_count', true);
  }
}
