import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/**
 * What a topology run's repairs changed, kept: the repair itself (retry, re-run of a node, skip;
 * who and when) and each node row it reset or removed, as it was. The node rows hold only the
 * present; with this and the node tasks' attempts, `GET /v1/topology-runs/{id}/history` tells
 * every node execution and decision of the run, retries included.
 */
export class TopologyHistory1765900000000 implements MigrationInterface {
  name = 'TopologyHistory1765900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'baton_topology_history',
        columns: [
          { name: 'entry_id', type: 'varchar', length: '32', isPrimary: true },
          { name: 'run_id', type: 'varchar', length: '32', isNullable: false },
          { name: 'at', type: 'bigint', isNullable: false },
          { name: 'action', type: 'varchar', length: '16', isNullable: false },
          { name: 'node_key', type: 'varchar', length: '64', isNullable: true },
          { name: 'item', type: 'int', isNullable: true },
          { name: 'actor', type: 'varchar', length: '200', isNullable: true },
          {
            name: 'detail',
            type: q.connection.driver.options.type === 'mysql' ? 'mediumtext' : 'text',
            isNullable: true,
          },
        ],
        indices: [
          new TableIndex({ name: 'ix_topology_history_run', columnNames: ['run_id', 'entry_id'] }),
        ],
      }),
      true,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('baton_topology_history', true);
  }
}
