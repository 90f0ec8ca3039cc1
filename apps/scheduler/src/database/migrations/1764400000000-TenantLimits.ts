import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/**
 * Per-tenant limits set through the API (`/v1/tenants/{tenant}/limits`): starts per second and
 * tasks running at once over the whole fleet. A tenant without a row has the configured defaults.
 * And an index for counting a tenant's RUNNING tasks.
 */
export class TenantLimits1764400000000 implements MigrationInterface {
  name = 'TenantLimits1764400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'baton_tenant_limit',
        columns: [
          { name: 'tenant', type: 'varchar', length: '100', isPrimary: true },
          { name: 'rate_limit_per_sec', type: 'int', isNullable: true },
          { name: 'concurrency_limit', type: 'int', isNullable: true },
          { name: 'updated_at', type: 'bigint', isNullable: false },
        ],
      }),
      true,
    );
    // A tenant's concurrency limit counts its RUNNING tasks on every start.
    await q.createIndex(
      'baton_task',
      new TableIndex({ name: 'ix_task_tenant_status', columnNames: ['tenant', 'status'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('baton_task', 'ix_task_tenant_status');
    await q.dropTable('baton_tenant_limit');
  }
}
