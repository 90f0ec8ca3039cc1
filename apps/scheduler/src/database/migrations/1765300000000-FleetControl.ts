import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

const big = (name: string): TableColumn =>
  new TableColumn({ name, type: 'bigint', isNullable: true });

/**
 * Fleet control: a task type's rules on the versions of the workers that take its new tasks
 * (JSON), and what people set on a worker by hand: since when it drains, and a blacklist with its
 * reason, since when and until when (null: until lifted). Registrations and heartbeats leave
 * these alone.
 */
export class FleetControl1765300000000 implements MigrationInterface {
  name = 'FleetControl1765300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'baton_task_type',
      new TableColumn({ name: 'worker_rules', type: 'text', isNullable: true }),
    );
    await q.addColumns('baton_worker', [
      big('draining_since'),
      new TableColumn({
        name: 'manual_blacklist_reason',
        type: 'varchar',
        length: '500',
        isNullable: true,
      }),
      big('manual_blacklist_since'),
      big('manual_blacklist_until'),
    ]);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const c of [
      'manual_blacklist_until',
      'manual_blacklist_since',
      'manual_blacklist_reason',
      'draining_since',
    ])
      await q.dropColumn('baton_worker', c);
    await q.dropColumn('baton_task_type', 'worker_rules');
  }
}
