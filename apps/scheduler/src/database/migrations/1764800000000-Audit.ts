import { MigrationInterface, QueryRunner, Table } from 'typeorm';

/** The audit log: configuration changes made through the API (who, when, what). */
export class Audit1764800000000 implements MigrationInterface {
  name = 'Audit1764800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'baton_audit',
        columns: [
          { name: 'audit_id', type: 'varchar', length: '26', isPrimary: true },
          { name: 'at', type: 'bigint', isNullable: false },
          { name: 'actor', type: 'varchar', length: '120', isNullable: false },
          { name: 'action', type: 'varchar', length: '40', isNullable: false },
          { name: 'target', type: 'varchar', length: '200', isNullable: true },
          { name: 'detail', type: 'text', isNullable: true },
        ],
        indices: [{ name: 'ix_audit_at', columnNames: ['at'] }],
      }),
      true,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('baton_audit');
  }
}
