import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

/**
 * The task list's time filter (`created_from`, `created_to`) for keys of every tenant: a window
 * of creation times is read from this index rather than by walking the whole table down to it
 * (a tenant's own keys have `ix_task_tenant_created`).
 */
export class TaskCreatedIndex1765800000000 implements MigrationInterface {
  name = 'TaskCreatedIndex1765800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createIndex(
      'baton_task',
      new TableIndex({ name: 'ix_task_created', columnNames: ['created_at', 'task_id'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('baton_task', 'ix_task_created');
  }
}
