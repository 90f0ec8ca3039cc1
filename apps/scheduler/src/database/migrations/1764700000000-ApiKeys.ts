import { MigrationInterface, QueryRunner, Table } from 'typeorm';

/** API keys of the public API: a name, a role, an optional tenant, the SHA-256 of the secret. */
export class ApiKeys1764700000000 implements MigrationInterface {
  name = 'ApiKeys1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'baton_api_key',
        columns: [
          { name: 'key_id', type: 'varchar', length: '26', isPrimary: true },
          { name: 'name', type: 'varchar', length: '100', isNullable: false },
          { name: 'role', type: 'varchar', length: '16', isNullable: false },
          { name: 'tenant', type: 'varchar', length: '100', isNullable: true },
          { name: 'prefix', type: 'varchar', length: '16', isNullable: false },
          { name: 'key_hash', type: 'varchar', length: '64', isNullable: false },
          { name: 'created_at', type: 'bigint', isNullable: false },
          { name: 'expires_at', type: 'bigint', isNullable: true },
          { name: 'revoked_at', type: 'bigint', isNullable: true },
          { name: 'last_used_at', type: 'bigint', isNullable: true },
        ],
        indices: [
          { name: 'ux_api_key_name', columnNames: ['name'], isUnique: true },
          { name: 'ux_api_key_hash', columnNames: ['key_hash'], isUnique: true },
        ],
      }),
      true,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('baton_api_key');
  }
}
