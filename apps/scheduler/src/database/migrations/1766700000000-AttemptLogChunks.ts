import { MigrationInterface, QueryRunner, Table, TableColumn, TableIndex } from 'typeorm';

/** Lines moved at a time. */
const PAGE = 2000;
/** A chunk's text is kept under about this many characters, as the scheduler keeps it. */
const CHUNK_CHARS = 256 * 1024;
const LEVELS = ['debug', 'info', 'warn', 'error'];

interface LineRow {
  task_id: string;
  attempt: unknown;
  seq: unknown;
  at: unknown;
  level: string;
  message: string;
  fields: string | null;
  bytes: unknown;
}

/** An attempt's lines of a page, in chunks each under CHUNK_CHARS (a line alone may be more). */
function bounded(lines: LineRow[]): LineRow[][] {
  const out: LineRow[][] = [];
  let part: LineRow[] = [];
  let size = 0;
  for (const l of lines) {
    const chars = l.message.length + (l.fields?.length ?? 0) + 40;
    if (part.length > 0 && size + chars > CHUNK_CHARS) {
      out.push(part);
      part = [];
      size = 0;
    }
    part.push(l);
    size += chars;
  }
  if (part.length > 0) out.push(part);
  return out;
}

/**
 * Worker log lines kept a chunk per batch, not a row per line (ten rows and twenty index entries
 * a task cost the database more than the rest of the task's log did): `baton_task_log_chunk`
 * holds each chunk's lines as one JSON text, and an attempt's usage its highest kept seq. The
 * lines kept so far move into chunks (one per attempt and page of lines).
 */
export class AttemptLogChunks1766700000000 implements MigrationInterface {
  name = 'AttemptLogChunks1766700000000';

  async up(q: QueryRunner): Promise<void> {
    const mysql = q.connection.driver.options.type === 'mysql';
    await q.createTable(
      new Table({
        name: 'baton_task_log_chunk',
        columns: [
          {
            // SQLite only auto-increments an INTEGER PRIMARY KEY (64-bit there).
            name: 'id',
            type: mysql ? 'bigint' : 'integer',
            isPrimary: true,
            isGenerated: true,
            generationStrategy: 'increment',
          },
          { name: 'task_id', type: 'varchar', length: '32' },
          { name: 'attempt', type: 'int' },
          { name: 'first_seq', type: 'int' },
          { name: 'last_seq', type: 'int' },
          { name: 'line_count', type: 'int' },
          { name: 'bytes', type: 'int' },
          { name: 'levels', type: 'int' },
          // A chunk is kept under 256 KiB (a line of a batch over it is a chunk of its own).
          { name: 'body', type: mysql ? 'mediumtext' : 'text' },
        ],
        indices: [
          new TableIndex({
            name: 'ux_task_log_chunk',
            columnNames: ['task_id', 'attempt', 'first_seq'],
            isUnique: true,
          }),
          // A stream following an attempt asks for what came after the last line it sent.
          new TableIndex({
            name: 'ix_task_log_chunk_last',
            columnNames: ['task_id', 'attempt', 'last_seq'],
          }),
        ],
      }),
      true,
    );
    // MySQL commits each DDL statement: a start stopped half-way through this migration left its
    // tables made and some lines copied, and the old table (dropped last) whole. Run again, it
    // makes what is missing and copies all the lines afresh.
    if (!(await q.hasColumn('baton_task_log_usage', 'last_seq')))
      await q.addColumn(
        'baton_task_log_usage',
        new TableColumn({ name: 'last_seq', type: 'int', default: -1 }),
      );
    if (!(await q.hasTable('baton_task_log_line'))) return;
    await q.query('DELETE FROM baton_task_log_chunk');
    let from: [string, number, number] = ['', 0, -1];
    for (;;) {
      const rows = (await q.query(
        `SELECT task_id, attempt, seq, at, level, message, fields, bytes FROM baton_task_log_line
          WHERE task_id > ? OR (task_id = ? AND (attempt > ? OR (attempt = ? AND seq > ?)))
          ORDER BY task_id, attempt, seq LIMIT ${PAGE}`,
        [from[0], from[0], from[1], from[1], from[2]],
      )) as LineRow[];
      if (rows.length === 0) break;
      const chunks = new Map<string, LineRow[]>();
      for (const r of rows) {
        const k = `${r.task_id}/${Number(r.attempt)}`;
        const list = chunks.get(k);
        if (list) list.push(r);
        else chunks.set(k, [r]);
      }
      for (const all of chunks.values())
        for (const lines of bounded(all)) {
          const first = lines[0];
          // As the scheduler writes a chunk: each line's seq and time as steps from the line
          // before (the first's from the chunk's first seq and from 0), the level as its index.
          let prev = { seq: Number(first.seq), at: 0 };
          const body = JSON.stringify(
            lines.map((l) => {
              const packed: unknown[] = [
                Number(l.seq) - prev.seq,
                Number(l.at) - prev.at,
                Math.max(0, LEVELS.indexOf(l.level)),
                l.message,
              ];
              if (l.fields) packed.push(JSON.parse(l.fields));
              prev = { seq: Number(l.seq), at: Number(l.at) };
              return packed;
            }),
          );
          const lastSeq = Number(lines[lines.length - 1].seq);
          await q.query(
            `INSERT INTO baton_task_log_chunk (task_id, attempt, first_seq, last_seq, line_count, bytes, levels, body)
              VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
            [
              first.task_id,
              Number(first.attempt),
              Number(first.seq),
              lastSeq,
              lines.length,
              lines.reduce((n, l) => n + Number(l.bytes), 0),
              lines.reduce((bits, l) => bits | (1 << Math.max(0, LEVELS.indexOf(l.level))), 0),
              body,
            ],
          );
          await q.query(
            'UPDATE baton_task_log_usage SET last_seq = ? WHERE task_id = ? AND attempt = ? AND last_seq < ?',
            [lastSeq, first.task_id, Number(first.attempt), lastSeq],
          );
        }
      const last = rows[rows.length - 1];
      from = [last.task_id, Number(last.attempt), Number(last.seq)];
    }
    await q.dropTable('baton_task_log_line', true);
  }

  async down(q: QueryRunner): Promise<void> {
    const mysql = q.connection.driver.options.type === 'mysql';
    await q.createTable(
      new Table({
        name: 'baton_task_log_line',
        columns: [
          {
            name: 'id',
            type: mysql ? 'bigint' : 'integer',
            isPrimary: true,
            isGenerated: true,
            generationStrategy: 'increment',
          },
          { name: 'task_id', type: 'varchar', length: '32' },
          { name: 'attempt', type: 'int' },
          { name: 'seq', type: 'int' },
          { name: 'at', type: 'bigint' },
          { name: 'level', type: 'varchar', length: '8' },
          { name: 'message', type: 'varchar', length: '4000' },
          { name: 'fields', type: 'text', isNullable: true },
          { name: 'bytes', type: 'int' },
        ],
        indices: [
          new TableIndex({
            name: 'ux_task_log_line',
            columnNames: ['task_id', 'attempt', 'seq'],
            isUnique: true,
          }),
        ],
      }),
      true,
    );
    for (let id = 0; ;) {
      const chunks = (await q.query(
        'SELECT id, task_id, attempt, first_seq, body FROM baton_task_log_chunk WHERE id > ? ORDER BY id LIMIT 100',
        [id],
      )) as { id: unknown; task_id: string; attempt: unknown; first_seq: unknown; body: string }[];
      if (chunks.length === 0) break;
      for (const c of chunks) {
        let seq = Number(c.first_seq);
        let at = 0;
        for (const [seqStep, atStep, levelIndex, message, fields] of JSON.parse(c.body) as [
          number,
          number,
          number,
          string,
          object?,
        ][]) {
          seq += seqStep;
          at += atStep;
          const level = LEVELS[levelIndex];
          const f = fields ? JSON.stringify(fields) : null;
          await q.query(
            `INSERT INTO baton_task_log_line (task_id, attempt, seq, at, level, message, fields, bytes)
              VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
            [
              c.task_id,
              Number(c.attempt),
              seq,
              at,
              level,
              message,
              f,
              Buffer.byteLength(message) + (f ? Buffer.byteLength(f) : 0) + 32,
            ],
          );
        }
      }
      id = Number(chunks[chunks.length - 1].id);
    }
    await q.dropColumn('baton_task_log_usage', 'last_seq');
    await q.dropTable('baton_task_log_chunk', true);
  }
}
