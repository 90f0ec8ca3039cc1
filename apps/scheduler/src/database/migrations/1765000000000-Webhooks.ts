import {
  MigrationInterface,
  QueryRunner,
  Table,
  TableColumn,
  TableColumnOptions,
  TableIndex,
} from 'typeorm';

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
const int = (name: string, nullable = false): TableColumnOptions => ({
  name,
  type: 'int',
  isNullable: nullable,
});
/** A task's JSON can pass 64 KiB (MySQL's TEXT): MEDIUMTEXT there, TEXT (unbounded) on SQLite. */
const long = (q: QueryRunner, name: string, nullable = false): TableColumnOptions => ({
  name,
  type: q.connection.driver.options.type === 'mysql' ? 'mediumtext' : 'text',
  isNullable: nullable,
});

/**
 * Webhooks: subscriptions (and each tenant's callback signer), the messages to deliver (one per
 * subscription and event, kept pending until delivered or given up) and the delivery log (one row
 * per attempt); a worker keeps since when it is unhealthy (`worker.unhealthy` is sent once per
 * spell).
 */
export class Webhooks1765000000000 implements MigrationInterface {
  name = 'Webhooks1765000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn('baton_worker', new TableColumn(big('unhealthy_since', true)));
    await q.createTable(
      new Table({
        name: 'baton_webhook',
        columns: [
          { ...str('webhook_id', 40), isPrimary: true },
          str('kind', 16),
          str('tenant', 100, true),
          str('url', 2048, true),
          { name: 'events', type: 'text' },
          { name: 'task_types', type: 'text' },
          { name: 'labels', type: 'text' },
          str('description', 500),
          { name: 'enabled', type: 'boolean' },
          str('secret', 100),
          str('previous_secret', 100, true),
          big('previous_secret_until', true),
          str('disabled_reason', 500, true),
          big('failing_since', true),
          big('created_at'),
          big('updated_at'),
          int('version'),
        ],
        indices: [new TableIndex({ name: 'ix_webhook_kind', columnNames: ['kind', 'tenant'] })],
      }),
      true,
    );
    await q.createTable(
      new Table({
        name: 'baton_webhook_message',
        columns: [
          { ...str('message_id', 40), isPrimary: true },
          str('webhook_id', 40),
          str('event_type', 40),
          str('tenant', 100),
          str('task_id', 32, true),
          str('url', 2048, true),
          long(q, 'body'),
          big('seq'),
          str('status', 16),
          int('attempts'),
          big('next_at'),
          int('last_status', true),
          str('last_error', 500, true),
          big('created_at'),
          big('finished_at', true),
        ],
        indices: [
          new TableIndex({
            name: 'ix_webhook_message_next',
            columnNames: ['webhook_id', 'status', 'next_at', 'seq'],
          }),
          new TableIndex({
            name: 'ix_webhook_message_order',
            columnNames: ['webhook_id', 'task_id', 'seq'],
          }),
          new TableIndex({
            name: 'ix_webhook_message_created',
            columnNames: ['webhook_id', 'created_at'],
          }),
        ],
      }),
      true,
    );
    await q.createTable(
      new Table({
        name: 'baton_webhook_attempt',
        columns: [
          {
            name: 'id',
            type: q.connection.driver.options.type === 'mysql' ? 'bigint' : 'integer',
            isPrimary: true,
            isGenerated: true,
            generationStrategy: 'increment',
          },
          str('message_id', 40),
          str('webhook_id', 40),
          str('task_id', 32, true),
          int('attempt'),
          big('at'),
          int('status_code', true),
          int('latency_ms'),
          { name: 'response', type: 'text', isNullable: true },
          str('error', 500, true),
        ],
        indices: [
          new TableIndex({ name: 'ix_webhook_attempt_message', columnNames: ['message_id'] }),
        ],
      }),
      true,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('baton_webhook_attempt', true);
    await q.dropTable('baton_webhook_message', true);
    await q.dropTable('baton_webhook', true);
    await q.dropColumn('baton_worker', 'unhealthy_since');
  }
}
