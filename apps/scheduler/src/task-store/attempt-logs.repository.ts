import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { TransactionRunner } from '../database';
import { AppendRefusal, logRefusals } from './attempt-log-refusals';
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

/** Lines written in one transaction at most (the appends of a group add up to this). */
const GROUP_LINES = 2000;

type AppendResult = { accepted: number; duplicates: number };
export type { AppendRefusal } from './attempt-log-refusals';
interface Append {
  taskId: string;
  attempt: number;
  /** The worker's fence: the group checks it against the task and the attempt first. */
  fence?: number;
  lines: readonly AttemptLogLine[];
  caps: AttemptLogCaps;
  resolve(r: AppendResult | AppendRefusal): void;
  reject(err: unknown): void;
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

  /**
   * Keeps the lines not kept yet; how many were new, and how many were sent before. Appends that
   * arrive while one is being written share the next transaction (one statement per step for all
   * of them), so many workers' batches cost what a few do: no wait is added to the first.
   */
  append(
    taskId: string,
    attempt: number,
    lines: readonly AttemptLogLine[],
    caps: AttemptLogCaps,
  ): Promise<{ accepted: number; duplicates: number }> {
    return new Promise((resolve, reject) => {
      this.queue.push({
        taskId,
        attempt,
        lines,
        caps,
        resolve: (r) => (typeof r === 'string' ? reject(new Error(r)) : resolve(r)),
        reject,
      });
      if (!this.writing) void this.drain();
    });
  }

  /**
   * A worker's lines, kept as `append` keeps them once the group has checked them: `unknown`
   * when there is no such task, `stale` when the attempt is not one the task had or the fence is
   * not one the attempt was driven with. The checks are read for the whole group at once (two
   * statements), not per batch: every worker sends a batch per attempt.
   */
  appendFromWorker(
    taskId: string,
    attempt: number,
    fence: number,
    lines: readonly AttemptLogLine[],
    caps: AttemptLogCaps,
  ): Promise<AppendResult | AppendRefusal> {
    return new Promise((resolve, reject) => {
      this.queue.push({ taskId, attempt, fence, lines, caps, resolve, reject });
      if (!this.writing) void this.drain();
    });
  }

  private readonly queue: Append[] = [];
  private writing = false;

  private async drain(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length > 0) {
        // A group of at most GROUP_LINES lines (an append's lines never split).
        let n = 0;
        let lines = 0;
        while (
          n < this.queue.length &&
          (n === 0 || lines + this.queue[n].lines.length <= GROUP_LINES)
        )
          lines += this.queue[n++].lines.length;
        const group = this.queue.splice(0, n);
        try {
          const results = await this.writeGroup(group);
          group.forEach((a, i) => a.resolve(results[i]));
        } catch (err) {
          for (const a of group) a.reject(err);
        }
      }
    } finally {
      this.writing = false;
    }
  }

  /**
   * One transaction for a group of appends. A line sent twice at once through two schedulers
   * makes the unique key refuse the second whole transaction, which runs again and finds it kept.
   */
  private async writeGroup(group: readonly Append[]): Promise<(AppendResult | AppendRefusal)[]> {
    for (let tries = 1; ; tries++) {
      try {
        return await this.tx.run((m) => this.writeIn(m, group));
      } catch (err) {
        if (tries >= 3 || !isUniqueViolation(err)) throw err;
      }
    }
  }

  private async writeIn(
    m: EntityManager,
    all: readonly Append[],
  ): Promise<(AppendResult | AppendRefusal)[]> {
    const refused = await logRefusals(this.sql, m, all);
    const group = all.filter((a) => !refused.has(a));
    const written = group.length > 0 ? await this.writeChecked(m, group) : [];
    return all.map((a) => refused.get(a) ?? (written[group.indexOf(a)] as AppendResult));
  }

  /**
   * Lines are seldom sent twice (a retry after a lost answer), so the group's lines are inserted
   * without looking first; when the unique key refuses one, the statement alone is undone (the
   * transaction goes on) and the group is written again without the lines already kept.
   */
  private async writeChecked(m: EntityManager, group: readonly Append[]): Promise<AppendResult[]> {
    let planned = this.plan(group, new Set());
    if (planned.rows.length === 0) return planned.results;
    try {
      await this.sql.insertRows(m, 'baton_task_log_line', planned.rows);
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      planned = this.plan(group, await this.keptSeqs(m, group));
      if (planned.rows.length === 0) return planned.results;
      await this.sql.insertRows(m, 'baton_task_log_line', planned.rows);
    }
    const { usage, results } = planned;
    const totals = await this.addUsage(m, [...usage.values()]);
    for (const u of usage.values()) {
      const t = totals.get(`${u.taskId}/${u.attempt}`);
      if (t && (t.lines > u.caps.maxLines || t.bytes > u.caps.maxBytes))
        await this.dropOldest(m, u.taskId, u.attempt, t, u.caps);
    }
    return results;
  }

  /** The rows of the group's lines not in `kept` (nor twice in the group), and their usage. */
  private plan(group: readonly Append[], kept: Set<string>) {
    const rows: Record<string, unknown>[] = [];
    const usage = new Map<
      string,
      { taskId: string; attempt: number; lines: number; bytes: number; caps: AttemptLogCaps }
    >();
    const results = group.map((a) => {
      let accepted = 0;
      for (const l of a.lines) {
        const key = `${a.taskId}/${a.attempt}/${l.seq}`;
        if (kept.has(key)) continue;
        kept.add(key);
        accepted++;
        const fields = l.fields ? JSON.stringify(l.fields) : null;
        const size = bytesOf(l, fields);
        rows.push({
          task_id: a.taskId,
          attempt: a.attempt,
          seq: l.seq,
          at: l.at,
          level: l.level,
          message: l.message,
          fields,
          bytes: size,
        });
        const u = usage.get(`${a.taskId}/${a.attempt}`) ?? {
          taskId: a.taskId,
          attempt: a.attempt,
          lines: 0,
          bytes: 0,
          caps: a.caps,
        };
        u.lines++;
        u.bytes += size;
        usage.set(`${a.taskId}/${a.attempt}`, u);
      }
      return { accepted, duplicates: a.lines.length - accepted };
    });
    return { rows, usage, results };
  }

  /** The seqs already kept of the group's lines, as `task/attempt/seq`. */
  private async keptSeqs(m: EntityManager, group: readonly Append[]): Promise<Set<string>> {
    const where: string[] = [];
    const params: unknown[] = [];
    for (const a of group) {
      const seqs = [...new Set(a.lines.map((l) => l.seq))];
      where.push(`(task_id = ? AND attempt = ? AND seq IN (${marks(seqs.length)}))`);
      params.push(a.taskId, a.attempt, ...seqs);
    }
    const { records } = await this.sql.exec(
      m,
      `SELECT task_id, attempt, seq FROM baton_task_log_line WHERE ${where.join(' OR ')}`,
      params,
    );
    return new Set(
      (records as { task_id: string; attempt: unknown; seq: unknown }[]).map(
        (r) => `${r.task_id}/${Number(r.attempt)}/${Number(r.seq)}`,
      ),
    );
  }

  /** Counts the new lines on each attempt's usage row (made on its first lines); the totals after. */
  private async addUsage(
    m: EntityManager,
    added: readonly { taskId: string; attempt: number; lines: number; bytes: number }[],
  ): Promise<Map<string, { lines: number; bytes: number }>> {
    const mysql = this.db.options.type !== 'better-sqlite3';
    const values = added.map(() => '(?, ?, ?, ?, 0)').join(', ');
    const params = added.flatMap((u) => [u.taskId, u.attempt, u.lines, u.bytes]);
    await this.sql.exec(
      m,
      mysql
        ? `INSERT INTO baton_task_log_usage (task_id, attempt, line_count, byte_count, dropped) VALUES ${values}
            ON DUPLICATE KEY UPDATE line_count = line_count + VALUES(line_count), byte_count = byte_count + VALUES(byte_count)`
        : `INSERT INTO baton_task_log_usage (task_id, attempt, line_count, byte_count, dropped) VALUES ${values}
            ON CONFLICT (task_id, attempt) DO UPDATE SET line_count = line_count + excluded.line_count, byte_count = byte_count + excluded.byte_count`,
      params,
    );
    const { records } = await this.sql.exec(
      m,
      `SELECT task_id, attempt, line_count, byte_count FROM baton_task_log_usage WHERE ${added.map(() => '(task_id = ? AND attempt = ?)').join(' OR ')}`,
      added.flatMap((u) => [u.taskId, u.attempt]),
    );
    const out = new Map<string, { lines: number; bytes: number }>();
    for (const r of records as {
      task_id: string;
      attempt: unknown;
      line_count: unknown;
      byte_count: unknown;
    }[])
      out.set(`${r.task_id}/${Number(r.attempt)}`, {
        lines: Number(r.line_count),
        bytes: Number(r.byte_count),
      });
    return out;
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
