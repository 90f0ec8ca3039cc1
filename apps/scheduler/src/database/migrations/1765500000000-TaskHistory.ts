import { MigrationInterface, QueryRunner, Table } from 'typeorm';

/**
 * Tasks finished per minute, by type and outcome, kept with every move to FINISH (the console's
 * throughput chart, `GET /v1/task-counts/history`) so that nobody scans the task table for them.
 * Sharded like the counts; rows older than a few hours are pruned by the retention pass. It
 * starts empty: finished tasks of before are not counted.
 */
export class TaskHistory1765500000000 implements MigrationInterface {
  name = 'TaskHistory1765500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'baton_task_minute',
        columns: [
          { name: 'minute', type: 'bigint', isPrimary: true },
          { name: 'task_type', type: 'varchar', length: '100', isPrimary: true },
          { name: 'outcome', type: 'varchar', length: '16', isPrimary: true },
          { name: 'shard', type: 'int', isPrimary: true },
          { name: 'n', type: 'bigint', isNullable: false, default: 0 },
        ],
      }),
      true,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('baton_task_minute', true);
  }
}
