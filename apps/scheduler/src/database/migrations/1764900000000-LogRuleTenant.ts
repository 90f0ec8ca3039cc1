import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** A log rule may belong to one tenant: it then reads only the logs ingested for that tenant. */
export class LogRuleTenant1764900000000 implements MigrationInterface {
  name = 'LogRuleTenant1764900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'baton_log_rule',
      new TableColumn({ name: 'tenant', type: 'varchar', length: '100', isNullable: true }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('baton_log_rule', 'tenant');
  }
}
