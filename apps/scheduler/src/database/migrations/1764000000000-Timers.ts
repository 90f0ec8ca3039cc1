import { MigrationInterface, QueryRunner, Table, TableColumnOptions, TableIndex } from 'typeorm';

const col = (
  name: string,
  type: 'varchar' | 'int' | 'bigint' | 'text',
  opts: { length?: number; nullable?: boolean } = {},
): TableColumnOptions => ({
  name,
  type,
  ...(opts.length ? { length: String(opts.length) } : {}),
  isNullable: opts.nullable ?? false,
});

/** Timed definitions for the Producer, and the member directory of distributed ownership. */
export class Timers1764000000000 implements MigrationInterface {
  name = 'Timers1764000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'baton_timer',
        columns: [
          { ...col('timer_id', 'varchar', { length: 32 }), isPrimary: true },
          col('name', 'varchar', { length: 200 }),
          col('tenant', 'varchar', { length: 100 }),
          col('schedule', 'text'),
          col('start_at', 'bigint', { nullable: true }),
          col('end_at', 'bigint', { nullable: true }),
          col('enabled', 'int'),
          col('overlap_policy', 'varchar', { length: 16 }),
          col('misfire_policy', 'varchar', { length: 16 }),
          col('misfire_grace_ms', 'int'),
          col('template', 'text'),
          col('next_fire_at', 'bigint', { nullable: true }),
          col('last_fire_at', 'bigint', { nullable: true }),
          col('last_task_id', 'varchar', { length: 32, nullable: true }),
          col('fire_count', 'int'),
          col('misfire_count', 'int'),
          col('skip_count', 'int'),
          col('version', 'int'),
          col('created_at', 'bigint'),
          col('updated_at', 'bigint'),
        ],
      }),
    );
    await q.createIndex(
      'baton_timer',
      new TableIndex({ name: 'ix_timer_due', columnNames: ['enabled', 'next_fire_at'] }),
    );
    await q.createTable(
      new Table({
        name: 'baton_producer_member',
        columns: [
          { ...col('member_id', 'varchar', { length: 100 }), isPrimary: true },
          col('joined_at', 'bigint'),
          col('seen_at', 'bigint'),
        ],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('baton_producer_member');
    await q.dropTable('baton_timer');
  }
}
