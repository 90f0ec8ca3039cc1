import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** Task types get a start-rate limit (tasks started per second, per scheduler instance). */
export class TaskTypeRateLimit1763900000000 implements MigrationInterface {
  name = 'TaskTypeRateLimit1763900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'baton_task_type',
      new TableColumn({ name: 'rate_limit_per_sec', type: 'int', isNullable: true }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('baton_task_type', 'rate_limit_per_sec');
  }
}
