import { MigrationInterface, QueryRunner, Table, TableColumnOptions, TableIndex } from 'typeorm';

const str = (name: string, length: number, nullable = false): TableColumnOptions => ({
  name,
  type: 'varchar',
  length: String(length),
  isNullable: nullable,
});
const big = (name: string, nullable = false): TableColumnOptions => ({
  name,
  type: 'bigint',
  isNullable: nullable,
});
const int = (name: string): TableColumnOptions => ({ name, type: 'int', isNullable: false });
/** Definitions of 1,000 nodes and for_each lists of 10,000 pass 64 KiB: MEDIUMTEXT on MySQL. */
const long = (q: QueryRunner, name: string, nullable = false): TableColumnOptions => ({
  name,
  type: q.connection.driver.options.type === 'mysql' ? 'mediumtext' : 'text',
  isNullable: nullable,
});

/**
 * Topologies: definitions (one row per version), runs (the centre task's id, the definition
 * version it started with, its input) and what was decided for each node of a run, keyed
 * (run, node, item) so each node task is created once.
 */
export class Topologies1765100000000 implements MigrationInterface {
  name = 'Topologies1765100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'baton_topology',
        columns: [
          { ...str('name', 100), isPrimary: true },
          { ...int('version'), isPrimary: true },
          str('tenant', 100, true),
          long(q, 'spec'),
          str('created_by', 200),
          big('created_at'),
        ],
      }),
      true,
    );
    await q.createTable(
      new Table({
        name: 'baton_topology_run',
        columns: [
          { ...str('run_id', 32), isPrimary: true },
          str('name', 100),
          int('version'),
          str('tenant', 100),
          long(q, 'input'),
          int('depth'),
          str('parent_run_id', 32, true),
          int('active'),
          big('wake_at', true),
          big('created_at'),
          big('updated_at'),
        ],
        indices: [
          new TableIndex({ name: 'ix_topology_run_name', columnNames: ['name', 'created_at'] }),
          new TableIndex({ name: 'ix_topology_run_wake', columnNames: ['active', 'wake_at'] }),
        ],
      }),
      true,
    );
    await q.createTable(
      new Table({
        name: 'baton_topology_node',
        columns: [
          { ...str('run_id', 32), isPrimary: true },
          { ...str('node_key', 64), isPrimary: true },
          { ...int('item'), isPrimary: true },
          str('state', 16),
          str('task_id', 32, true),
          long(q, 'result', true),
          big('created_at'),
          big('updated_at'),
        ],
      }),
      true,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('baton_topology_node', true);
    await q.dropTable('baton_topology_run', true);
    await q.dropTable('baton_topology', true);
  }
}
