import { EntityManager } from 'typeorm';
import { AttemptLogLine, bodyOf, levelBit, lineBytes, linesOf } from './attempt-log-chunks';
import { SqlRunner } from './sql-runner';

/** What an attempt's log keeps at most; the oldest lines go first. */
export interface AttemptLogCaps {
  maxLines: number;
  maxBytes: number;
}

/** An attempt's use of its caps, and the highest seq it kept (-1: none). */
export interface Usage {
  lines: number;
  bytes: number;
  lastSeq: number;
  dropped: number;
}

const marks = (n: number): string => Array.from({ length: n }, () => '?').join(', ');
export const keyOf = (taskId: string, attempt: number): string => `${taskId}/${attempt}`;

/**
 * The statements of an attempt log's write, in the writing group's transaction: the attempts'
 * usage, what a resend overlaps, and the oldest lines dropped for the caps.
 */
export class AttemptLogRows {
  constructor(
    private readonly sql: SqlRunner,
    private readonly mysql: boolean,
  ) {}

  /** The usage rows of the attempts that have one. */
  async usageOf(
    m: EntityManager,
    attempts: readonly { taskId: string; attempt: number }[],
  ): Promise<Map<string, Usage>> {
    const { records } = await this.sql.exec(
      m,
      `SELECT task_id, attempt, line_count, byte_count, last_seq, dropped FROM baton_task_log_usage
        WHERE ${attempts.map(() => '(task_id = ? AND attempt = ?)').join(' OR ')}`,
      attempts.flatMap((a) => [a.taskId, a.attempt]),
    );
    const out = new Map<string, Usage>();
    for (const r of records as Record<string, unknown>[])
      out.set(keyOf(r.task_id as string, Number(r.attempt)), {
        lines: Number(r.line_count),
        bytes: Number(r.byte_count),
        lastSeq: Number(r.last_seq),
        dropped: Number(r.dropped),
      });
    return out;
  }

  /**
   * Whether a seq from `low` up is kept already: in a chunk that reaches that far, or below the
   * attempt's oldest line still kept after some were dropped (sent, kept, then dropped by the caps).
   */
  async keptOf(
    m: EntityManager,
    taskId: string,
    attempt: number,
    low: number,
    u: Usage,
  ): Promise<(seq: number) => boolean> {
    const { records } = await this.sql.exec(
      m,
      'SELECT first_seq, body FROM baton_task_log_chunk WHERE task_id = ? AND attempt = ? AND last_seq >= ? AND first_seq <= ?',
      [taskId, attempt, low, u.lastSeq],
    );
    const seqs = new Set<number>();
    for (const r of records as { first_seq: unknown; body: string }[])
      for (const l of linesOf(r.body, Number(r.first_seq))) seqs.add(l.seq);
    let floor = -1;
    if (u.dropped > 0) {
      const oldest = await this.sql.exec(
        m,
        'SELECT first_seq, body FROM baton_task_log_chunk WHERE task_id = ? AND attempt = ? ORDER BY first_seq, id LIMIT 1',
        [taskId, attempt],
      );
      const first = oldest.records[0] as { first_seq: unknown; body: string } | undefined;
      floor = first
        ? Math.min(...linesOf(first.body, Number(first.first_seq)).map((l) => l.seq))
        : u.lastSeq + 1;
    }
    return (seq) => seqs.has(seq) || seq < floor;
  }

  /** Counts the new lines on each attempt's usage row (made on its first lines). */
  async addUsage(
    m: EntityManager,
    added: readonly {
      taskId: string;
      attempt: number;
      lines: number;
      bytes: number;
      last: number;
    }[],
  ): Promise<void> {
    const mysql = this.mysql;
    const values = added.map(() => '(?, ?, ?, ?, 0, ?)').join(', ');
    const params = added.flatMap((u) => [u.taskId, u.attempt, u.lines, u.bytes, u.last]);
    await this.sql.exec(
      m,
      mysql
        ? `INSERT INTO baton_task_log_usage (task_id, attempt, line_count, byte_count, dropped, last_seq) VALUES ${values}
            ON DUPLICATE KEY UPDATE line_count = line_count + VALUES(line_count), byte_count = byte_count + VALUES(byte_count),
            last_seq = GREATEST(last_seq, VALUES(last_seq))`
        : `INSERT INTO baton_task_log_usage (task_id, attempt, line_count, byte_count, dropped, last_seq) VALUES ${values}
            ON CONFLICT (task_id, attempt) DO UPDATE SET line_count = line_count + excluded.line_count,
            byte_count = byte_count + excluded.byte_count, last_seq = MAX(last_seq, excluded.last_seq)`,
      params,
    );
  }

  /**
   * Drops the attempt's oldest lines until it is within its caps, and counts them: whole chunks
   * while that is not yet enough, then the oldest lines of the chunk where it becomes enough.
   */
  async dropOldest(
    m: EntityManager,
    taskId: string,
    attempt: number,
    caps: AttemptLogCaps,
  ): Promise<void> {
    // Read with locks, as they are now: another scheduler may have added or dropped lines of the
    // same attempt since this transaction's first read (this one holds the usage row from its
    // upsert on, so the totals cannot move under it).
    const lock = this.mysql ? ' FOR UPDATE' : '';
    const usage = await this.sql.exec(
      m,
      `SELECT line_count, byte_count FROM baton_task_log_usage WHERE task_id = ? AND attempt = ?${lock}`,
      [taskId, attempt],
    );
    const row = usage.records[0] as { line_count: unknown; byte_count: unknown } | undefined;
    if (!row) return;
    let lines = Number(row.line_count);
    let bytes = Number(row.byte_count);
    const over = (): boolean => lines > caps.maxLines || bytes > caps.maxBytes;
    let dropped = 0;
    const doomed: unknown[] = [];
    let cut: { id: unknown; body: string } | undefined;
    for (let offset = 0; over() && !cut; offset += 500) {
      const { records } = await this.sql.exec(
        m,
        `SELECT id, first_seq, line_count, bytes FROM baton_task_log_chunk WHERE task_id = ? AND attempt = ?
          ORDER BY first_seq, id LIMIT 500 OFFSET ${offset}${lock}`,
        [taskId, attempt],
      );
      if (records.length === 0) break;
      for (const r of records as {
        id: unknown;
        first_seq: unknown;
        line_count: unknown;
        bytes: unknown;
      }[]) {
        const n = Number(r.line_count);
        const b = Number(r.bytes);
        if (lines - n > caps.maxLines || bytes - b > caps.maxBytes) {
          // Still over without all of it: the whole chunk goes.
          doomed.push(r.id);
          lines -= n;
          bytes -= b;
          dropped += n;
          continue;
        }
        // Within the caps once some of it goes: its oldest lines, as many as it takes.
        const body = await this.sql.exec(
          m,
          `SELECT body FROM baton_task_log_chunk WHERE id = ?${lock}`,
          [r.id],
        );
        const left = linesOf((body.records[0] as { body: string }).body, Number(r.first_seq));
        while (left.length > 0 && over()) {
          const l = left.shift() as AttemptLogLine;
          lines--;
          bytes -= lineBytes(l);
          dropped++;
        }
        if (left.length === 0) doomed.push(r.id);
        else cut = { id: r.id, body: bodyOf(left, Number(r.first_seq)) };
        if (cut) {
          let levels = 0;
          for (const l of left) levels |= levelBit(l.level);
          await this.sql.exec(
            m,
            'UPDATE baton_task_log_chunk SET body = ?, line_count = ?, bytes = ?, levels = ? WHERE id = ?',
            [cut.body, left.length, left.reduce((s, l) => s + lineBytes(l), 0), levels, r.id],
          );
        }
        break;
      }
    }
    for (let i = 0; i < doomed.length; i += 500) {
      const part = doomed.slice(i, i + 500);
      await this.sql.exec(
        m,
        `DELETE FROM baton_task_log_chunk WHERE id IN (${marks(part.length)})`,
        part,
      );
    }
    await this.sql.exec(
      m,
      'UPDATE baton_task_log_usage SET line_count = ?, byte_count = ?, dropped = dropped + ? WHERE task_id = ? AND attempt = ?',
      [lines, bytes, dropped, taskId, attempt],
    );
  }
}
