import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { TransactionRunner } from '../database';
import { isUniqueViolation, SqlRunner } from './sql-runner';

/** The levels of a log line, least severe first. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A line as a worker sends it. */
export interface AttemptLogLine {
  seq: number;
  at: number;
  level: LogLevel;
  message: string;
  fields: Record<string, unknown> | null;
}

/** What an attempt's log keeps at most; the oldest lines go first. */
export interface AttemptLogCaps {
  maxLines: number;
  maxBytes: number;
}

/** A page of an attempt's log, oldest first, and how many of its oldest lines were dropped. */
export interface AttemptLogPage {
  lines: AttemptLogLine[];
  /** Pass as `after` for what comes next: the seq of the last line here (or the `after` given). */
  nextAfter: number;
  /** More lines are kept after this page already. */
  more: boolean;
  dropped: number;
}

const marks = (n: number): string => Array.from({ length: n }, () => '?').join(', ');
const bytesOf = (l: AttemptLogLine, fields: string | null): number =>
  Buffer.byteLength(l.message) + (fields ? Buffer.byteLength(fields) : 0) + 32;

/**
 * The log lines workers send per attempt of a task. A line is kept once however often it is
 * sent (its `seq` within the attempt), and an attempt keeps at most its caps of lines and bytes:
 * past them its oldest lines are dropped, and counted (`dropped`). Purged with the task.
 */
@Injectable()
export class AttemptLogsRepository {
  constructor(
    private readonly db: DataSource,
    private readonly sql: SqlRunner,
    private readonly tx: TransactionRunner,
  ) {}

  /** Keeps the lines not kept yet; how many were new, and how many were sent before. */
  async append(
    taskId: string,
    attempt: number,
    lines: readonly AttemptLogLine[],
    caps: AttemptLogCaps,
  ): Promise<{ accepted: number; duplicates: number }> {
    // A line sent twice at once by two schedulers' retries: the unique key refuses the second
    // whole transaction, which runs again and finds them kept.
    for (let tries = 1; ; tries++) {
      try {
        return await this.tx.run((m) => this.appendIn(m, taskId, attempt, lines, caps));
      } catch (err) {
        if (tries >= 3 || !isUniqueViolation(err)) throw err;
      }
    }
  }

  private async appendIn(
    m: EntityManager,
    taskId: string,
    attempt: number,
    lines: readonly AttemptLogLine[],
    caps: AttemptLogCaps,
  ): Promise<{ accepted: number; duplicates: number }> {
    const seqs = [...new Set(lines.map((l) => l.seq))];
    const { records } = await this.sql.exec(
      m,
      `SELECT seq FROM baton_task_log_line WHERE task_id = ? AND attempt = ? AND seq IN (${marks(seqs.length)})`,
      [taskId, attempt, ...seqs],
    );
    const kept = new Set((records as { seq: unknown }[]).map((r) => Number(r.seq)));
    const fresh = new Map<number, AttemptLogLine>();
    for (const l of lines) if (!kept.has(l.seq) && !fresh.has(l.seq)) fresh.set(l.seq, l);
    const duplicates = lines.length - fresh.size;
    if (fresh.size === 0) return { accepted: 0, duplicates };
    let bytes = 0;
    const rows = [...fresh.values()].map((l) => {
      const fields = l.fields ? JSON.stringify(l.fields) : null;
      const size = bytesOf(l, fields);
      bytes += size;
      return {
        task_id: taskId,
        attempt,
        seq: l.seq,
        at: l.at,
        level: l.level,
        message: l.message,
        fields,
        bytes: size,
      };
    });
    await this.sql.insertRows(m, 'baton_task_log_line', rows);
    const usage = await this.addUsage(m, taskId, attempt, rows.length, bytes);
    if (usage.lines > caps.maxLines || usage.bytes > caps.maxBytes)
      await this.dropOldest(m, taskId, attempt, usage, caps);
    return { accepted: rows.length, duplicates };
  }

  /** Counts the new lines on the attempt's usage row (made on its first lines); the totals after. */
  private async addUsage(
    m: EntityManager,
    taskId: string,
    attempt: number,
    lines: number,
    bytes: number,
  ): Promise<{ lines: number; bytes: number }> {
    const mysql = this.db.options.type !== 'better-sqlite3';
    await this.sql.exec(
      m,
      mysql
        ? `INSERT INTO baton_task_log_usage (task_id, attempt, line_count, byte_count, dropped) VALUES (?, ?, ?, ?, 0)
            ON DUPLICATE KEY UPDATE line_count = line_count + VALUES(line_count), byte_count = byte_count + VALUES(byte_count)`
        : `INSERT INTO baton_task_log_usage (task_id, attempt, line_count, byte_count, dropped) VALUES (?, ?, ?, ?, 0)
            ON CONFLICT (task_id, attempt) DO UPDATE SET line_count = line_count + excluded.line_count, byte_count = byte_count + excluded.byte_count`,
      [taskId, attempt, lines, bytes],
    );
    const { records } = await this.sql.exec(
      m,
      'SELECT line_count, byte_count FROM baton_task_log_usage WHERE task_id = ? AND attempt = ?',
      [taskId, attempt],
    );
    const row = records[0] as { line_count: unknown; byte_count: unknown };
    return { lines: Number(row.line_count), bytes: Number(row.byte_count) };
  }

  /** Drops the attempt's oldest lines until it is within its caps, and counts them. */
  private async dropOldest(
    m: EntityManager,
    taskId: string,
    attempt: number,
    usage: { lines: number; bytes: number },
    caps: AttemptLogCaps,
  ): Promise<void> {
    let { lines, bytes } = usage;
    const doomed: unknown[] = [];
    while (lines > caps.maxLines || bytes > caps.maxBytes) {
      const { records } = await this.sql.exec(
        m,
        `SELECT id, bytes FROM baton_task_log_line WHERE task_id = ? AND attempt = ?
          ORDER BY seq LIMIT 1000 OFFSET ${doomed.length}`,
        [taskId, attempt],
      );
      if (records.length === 0) break;
      for (const r of records as { id: unknown; bytes: unknown }[]) {
        if (lines <= caps.maxLines && bytes <= caps.maxBytes) break;
        doomed.push(r.id);
        lines--;
        bytes -= Number(r.bytes);
      }
    }
    for (let i = 0; i < doomed.length; i += 500) {
      const part = doomed.slice(i, i + 500);
      await this.sql.exec(
        m,
        `DELETE FROM baton_task_log_line WHERE id IN (${marks(part.length)})`,
        part,
      );
    }
    await this.sql.exec(
      m,
      'UPDATE baton_task_log_usage SET line_count = ?, byte_count = ?, dropped = dropped + ? WHERE task_id = ? AND attempt = ?',
      [lines, bytes, doomed.length, taskId, attempt],
    );
  }

  /**
   * Lines of the attempt after `after` (a seq; -1 from the start), oldest first, at most `limit`,
   * at `minLevel` or above, whose message contains `text` (any case) when given.
   */
  async page(
    taskId: string,
    attempt: number,
    q: { after: number; limit: number; minLevel?: LogLevel; text?: string },
  ): Promise<AttemptLogPage> {
    const where = ['task_id = ?', 'attempt = ?', 'seq > ?'];
    const params: unknown[] = [taskId, attempt, q.after];
    if (q.minLevel && q.minLevel !== 'debug') {
      const levels = LOG_LEVELS.slice(LOG_LEVELS.indexOf(q.minLevel));
      where.push(`level IN (${marks(levels.length)})`);
      params.push(...levels);
    }
    if (q.text) {
      where.push("LOWER(message) LIKE ? ESCAPE '!'");
      params.push(`%${q.text.toLowerCase().replace(/[!%_]/g, (c) => `!${c}`)}%`);
    }
    const { records } = await this.sql.exec(
      undefined,
      `SELECT seq, at, level, message, fields FROM baton_task_log_line WHERE ${where.join(' AND ')}
        ORDER BY seq LIMIT ${Math.max(1, Math.floor(q.limit)) + 1}`,
      params,
    );
    const rows = records as {
      seq: unknown;
      at: unknown;
      level: string;
      message: string;
      fields: string | null;
    }[];
    const more = rows.length > q.limit;
    const lines = rows.slice(0, q.limit).map((r) => ({
      seq: Number(r.seq),
      at: Number(r.at),
      level: r.level as LogLevel,
      message: r.message,
      fields: r.fields ? (JSON.parse(r.fields) as Record<string, unknown>) : null,
    }));
    const usage = await this.sql.exec(
      undefined,
      'SELECT dropped FROM baton_task_log_usage WHERE task_id = ? AND attempt = ?',
      [taskId, attempt],
    );
    const dropped = Number((usage.records[0] as { dropped?: unknown } | undefined)?.dropped ?? 0);
    const nextAfter = lines.length > 0 ? lines[lines.length - 1].seq : q.after;
    return { lines, nextAfter, more, dropped };
  }
}
