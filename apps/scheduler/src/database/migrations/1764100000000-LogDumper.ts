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
const text = (name: string): TableColumnOptions => ({ name, type: 'text', isNullable: false });

/**
 * LogDumper: the rules that turn log records into tasks, and the stored read position of each
 * tailed file. Portable table API, like Init, so it runs on SQLite and MySQL/MariaDB alike.
 */
export class LogDumper1764100000000 implements MigrationInterface {
  name = 'LogDumper1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'baton_log_rule',
        columns: [
          { ...str('rule_id', 32), isPrimary: true },
          str('name', 100),
          text('sources'),
          // `match` is a reserved word in MySQL.
          text('match_spec'),
          text('template'),
          { name: 'enabled', type: 'boolean', default: true },
          big('created_at'),
          big('updated_at'),
        ],
        indices: [new TableIndex({ name: 'ix_log_rule_enabled', columnNames: ['enabled'] })],
      }),
      true,
    );
    await q.createTable(
      new Table({
        name: 'baton_log_offset',
        columns: [
          { ...str('source_id', 200), isPrimary: true },
          // Inode of the file the offset is in, so a rotation is noticed.
          str('file_id', 64, true),
          // Which file (or which life of one inode, after a truncation or an inode reuse) the
          // offset is in: it counts up each time the reader starts a file, and is part of every
          // line's position, so a truncated file's new lines never reuse an old line's key.
          { ...big('generation'), default: 0 },
          // Hash of the generation's first head_bytes bytes (up to 1 KiB, as far as read): a file
          // that no longer starts with them was truncated and rewritten, or is another file.
          { ...big('head_bytes'), default: 0 },
          str('head_hash', 64, true),
          big('byte_offset'),
          // Fence of the lease under which the offset was written: a stale reader cannot move it.
          big('fence'),
          str('owner', 100, true),
          big('updated_at'),
        ],
      }),
      true,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('baton_log_offset', true);
    await q.dropTable('baton_log_rule', true);
  }
}
