import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/**
 * A topology run's deadline: how long it may take (`deadline_ms`, from its definition or given
 * to the run) and when that ends (`deadline_at`, from its start, moved on by a retry or re-run
 * that reopens it). Runs of before have none.
 */
export class TopologyRunDeadline1766000000000 implements MigrationInterface {
  name = 'TopologyRunDeadline1766000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumns('baton_topology_run', [
      new TableColumn({ name: 'deadline_ms', type: 'bigint', isNullable: true }),
      new TableColumn({ name: 'deadline_at', type: 'bigint', isNullable: true }),
    ]);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('baton_topology_run', 'deadline_at');
    await q.dropColumn('baton_topology_run', 'deadline_ms');
  }
}
