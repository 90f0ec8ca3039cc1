import { MigrationInterface, QueryRunner, TableColumn, TableIndex } from 'typeorm';

/**
 * Retention: a task type may say how many days its finished tasks are kept (null: the instance's
 * default). The purge finds a type's oldest finished tasks through (task_type, status,
 * finished_at), which also serves everything the old (task_type, status) index did.
 */
export class Retention1764500000000 implements MigrationInterface {
  name = 'Retention1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'baton_task_type',
      new TableColumn({ name: 'retention_days', type: 'int', isNullable: true }),
    );
    await q.createIndex(
      'baton_task',
      new TableIndex({
        name: 'ix_task_type_status_finished',
        columnNames: ['task_type', 'status', 'finished_at'],
      }),
    );
    await q.dropIndex('baton_task', 'ix_task_type_status');
    // Old Idempotency-Key records are swept by age.
    await q.createIndex(
      'baton_idempotency',
      new TableIndex({ name: 'ix_idempotency_created', columnNames: ['created_at'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('baton_idempotency', 'ix_idempotency_created');
    await q.createIndex(
      'baton_task',
      new TableIndex({ name: 'ix_task_type_status', columnNames: ['task_type', 'status'] }),
    );
    await q.dropIndex('baton_task', 'ix_task_type_status_finished');
    await q.dropColumn('baton_task_type', 'retention_days');
  }
}
