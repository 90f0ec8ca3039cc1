import { MigrationInterface, QueryRunner, Table, TableColumnOptions, TableIndex } from 'typeorm';

const str = (name: string, length: number, nullable = false): TableColumnOptions => ({
  name,
  type: 'varchar',
  length: String(length),
  isNullable: nullable,
});
const int = (name: string, nullable = false): TableColumnOptions => ({
  name,
  type: 'int',
  isNullable: nullable,
});
const big = (name: string, nullable = false): TableColumnOptions => ({
  name,
  type: 'bigint',
  isNullable: nullable,
});
const text = (name: string, nullable = false): TableColumnOptions => ({
  name,
  type: 'text',
  isNullable: nullable,
});
/** SQLite only auto-increments an INTEGER PRIMARY KEY (64-bit there); MySQL needs BIGINT. */
const serial = (name: string, q: QueryRunner): TableColumnOptions => ({
  name,
  type: q.connection.driver.options.type === 'mysql' ? 'bigint' : 'integer',
  isPrimary: true,
  isGenerated: true,
  generationStrategy: 'increment',
});

/**
 * The scheduler's first schema: tasks, their lifecycle log and attempts, task types, workers and
 * idempotency records. Written with TypeORM's portable table API so the same migration runs on
 * SQLite (embedded default) and MySQL/MariaDB.
 */
export class Init1763800000000 implements MigrationInterface {
  name = 'Init1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'baton_task',
        columns: [
          { ...str('task_id', 32), isPrimary: true },
          str('task_type', 100),
          str('task_name', 200),
          str('tenant', 100),
          text('labels'),
          str('status', 16),
          int('version'),
          int('attempt'),
          int('priority'),
          str('blocking', 8),
          str('repetition', 16),
          text('params'),
          text('lock_keys'),
          str('requested_url', 500, true),
          str('worker_id', 100, true),
          str('worker_url', 500, true),
          str('parent_task_id', 32, true),
          str('control_task_id', 32, true),
          big('start_time', true),
          int('deadline_second', true),
          int('lock_timeout', true),
          int('max_retry'),
          str('idempotency_key', 200, true),
          str('callback_url', 500, true),
          big('due_at', true),
          str('owner', 100, true),
          big('lease_until', true),
          big('fence'),
          text('result', true),
          text('error', true),
          text('progress', true),
          big('heartbeat_at', true),
          str('outcome', 16, true),
          str('paused_from', 16, true),
          { name: 'cancel_requested', type: 'boolean', default: false },
          str('pending_action', 16, true),
          big('created_at'),
          big('updated_at'),
          big('started_at', true),
          big('finished_at', true),
        ],
        indices: [
          new TableIndex({ name: 'ix_task_due', columnNames: ['due_at'] }),
          new TableIndex({ name: 'ix_task_status_due', columnNames: ['status', 'due_at'] }),
          new TableIndex({ name: 'ix_task_type_status', columnNames: ['task_type', 'status'] }),
          new TableIndex({ name: 'ix_task_tenant_created', columnNames: ['tenant', 'created_at'] }),
          new TableIndex({
            name: 'ux_task_idempotency',
            columnNames: ['tenant', 'idempotency_key'],
            isUnique: true,
          }),
        ],
      }),
      true,
    );
    await q.createTable(
      new Table({
        name: 'baton_task_event',
        columns: [
          serial('id', q),
          str('task_id', 32),
          str('from_status', 16, true),
          str('to_status', 16),
          str('reason', 1000),
          str('actor', 100),
          int('attempt'),
          big('created_at'),
        ],
        indices: [new TableIndex({ name: 'ix_task_event_task', columnNames: ['task_id', 'id'] })],
      }),
      true,
    );
    await q.createTable(
      new Table({
        name: 'baton_task_label',
        columns: [
          { ...str('task_id', 32), isPrimary: true },
          { ...str('label_key', 100), isPrimary: true },
          str('label_value', 200),
        ],
        indices: [
          new TableIndex({ name: 'ix_task_label_kv', columnNames: ['label_key', 'label_value'] }),
        ],
      }),
      true,
    );
    await q.createTable(
      new Table({
        name: 'baton_task_attempt',
        columns: [
          serial('id', q),
          str('task_id', 32),
          int('attempt'),
          str('worker_id', 100, true),
          str('worker_url', 500, true),
          big('fence'),
          big('started_at'),
          big('ended_at', true),
          str('outcome', 16, true),
          str('error', 2000, true),
        ],
        indices: [
          new TableIndex({
            name: 'ux_task_attempt',
            columnNames: ['task_id', 'attempt'],
            isUnique: true,
          }),
        ],
      }),
      true,
    );
    await q.createTable(
      new Table({
        name: 'baton_task_type',
        columns: [
          { ...str('task_type', 100), isPrimary: true },
          str('blocking', 8),
          text('implements'),
          int('max_retry'),
          int('backoff_base_ms'),
          int('backoff_max_ms'),
          int('queue_timeout_ms', true),
          int('heartbeat_timeout_ms'),
          int('deadline_second', true),
          text('timeout_policy'),
          int('concurrency_limit', true),
          { name: 'rollback_on_fail', type: 'boolean' },
          big('created_at'),
          big('updated_at'),
        ],
      }),
      true,
    );
    await q.createTable(
      new Table({
        name: 'baton_worker',
        columns: [
          { ...str('worker_id', 100), isPrimary: true },
          str('url', 500),
          text('task_types'),
          str('version', 50),
          int('capacity'),
          big('last_heartbeat_at'),
          int('consecutive_failures'),
          big('blacklisted_until', true),
          big('registered_at'),
        ],
      }),
      true,
    );
    await q.createTable(
      new Table({
        name: 'baton_idempotency',
        columns: [
          { ...str('tenant', 100), isPrimary: true },
          { ...str('idempotency_key', 200), isPrimary: true },
          str('request_hash', 64),
          str('state', 16),
          int('response_status', true),
          text('response_body', true),
          big('created_at'),
        ],
      }),
      true,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of [
      'baton_idempotency',
      'baton_worker',
      'baton_task_type',
      'baton_task_attempt',
      'baton_task_label',
      'baton_task_event',
      'baton_task',
    ]) {
      await q.dropTable(table, true);
    }
  }
}
