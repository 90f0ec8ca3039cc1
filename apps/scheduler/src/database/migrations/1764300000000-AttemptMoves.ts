import { MigrationInterface, QueryRunner, TableColumn, TableIndex } from 'typeorm';

/**
 * An attempt is bound to its worker before the worker hears of it, and one the scheduler gives up
 * on is dropped on that worker:
 * - `baton_task.moves`: attempts opened because the one before never reached (or was taken away
 *   from) its worker; they do not count against max_retry.
 * - `baton_task_attempt.drop_due_at` / `drop_tries` / `dropped_at`: the worker of an attempt the
 *   scheduler ended must be told to drop it (a cancel notify), retried until it answers or is gone.
 */
export class AttemptMoves1764300000000 implements MigrationInterface {
  name = 'AttemptMoves1764300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'baton_task',
      new TableColumn({ name: 'moves', type: 'int', isNullable: false, default: 0 }),
    );
    await q.addColumns('baton_task_attempt', [
      new TableColumn({ name: 'drop_due_at', type: 'bigint', isNullable: true }),
      new TableColumn({ name: 'drop_tries', type: 'int', isNullable: false, default: 0 }),
      new TableColumn({ name: 'dropped_at', type: 'bigint', isNullable: true }),
    ]);
    await q.createIndex(
      'baton_task_attempt',
      new TableIndex({ name: 'ix_task_attempt_drop_due', columnNames: ['drop_due_at'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('baton_task_attempt', 'ix_task_attempt_drop_due');
    await q.dropColumns('baton_task_attempt', ['drop_due_at', 'drop_tries', 'dropped_at']);
    await q.dropColumn('baton_task', 'moves');
  }
}
