import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { TransactionRunner } from '../database';
import {
  AttemptLogLine,
  chunksOf,
  ChunkRow,
  levelsFrom,
  linesOf,
  LOG_LEVELS,
  LogLevel,
} from './attempt-log-chunks';
import { AppendRefusal, logRefusals } from './attempt-log-refusals';
import { AttemptLogCaps, AttemptLogRows, keyOf } from './attempt-log-rows';
import { isUniqueViolation, SqlRunner } from './sql-runner';

export { LOG_LEVELS } from './attempt-log-chunks';
export type { AttemptLogLine, LogLevel } from './attempt-log-chunks';
export type { AttemptLogCaps } from './attempt-log-rows';

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
/** Chunks a page reads at a time. */
const CHUNKS_A_READ = 64;

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

/**
 * The log lines workers send per attempt of a task. A line is kept once however often it is
 * sent (its `seq` within the attempt), and an attempt keeps at most its caps of lines and bytes:
 * past them its oldest lines are dropped, and counted (`dropped`). Purged with the task.
 *
 * Lines are stored a chunk per batch (attempt-log-chunks.ts). A batch whose lines are all above
 * the attempt's highest kept seq (every batch but a resend) is written without reading what is
 * kept; a resend reads the chunks it overlaps and keeps only the lines they lack.
 */
@Injectable()
export class AttemptLogsRepository {
  private readonly rows: AttemptLogRows;

  constructor(
    db: DataSource,
    private readonly sql: SqlRunner,
    private readonly tx: TransactionRunner,
  ) {
    this.rows = new AttemptLogRows(sql, db.options.type !== 'better-sqlite3');
  }

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
      this.startDrain();
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
      this.startDrain();
    });
  }

  private readonly queue: Append[] = [];
  private writing = false;

  /**
   * Starts writing once what is being queued now is queued: the batches of one call (queued in
   * one go) share the first group, rather than its first batch making a group of its own.
   */
  private startDrain(): void {
    if (this.writing) return;
    this.writing = true;
    queueMicrotask(() => void this.drain());
  }

  private async drain(): Promise<void> {
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
   * One transaction for a group of appends. A batch sent twice at once through two schedulers
   * makes the chunk key refuse the second whole transaction, which runs again and finds it kept.
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
   * The group's new lines as chunks, one statement for all; the attempts' usage, one more.
   * Only an attempt over its caps costs more (its oldest chunks dropped or cut).
   */
  private async writeChecked(m: EntityManager, group: readonly Append[]): Promise<AppendResult[]> {
    const attempts = new Map<string, { taskId: string; attempt: number; low: number }>();
    for (const a of group) {
      const low = Math.min(...a.lines.map((l) => l.seq));
      const k = keyOf(a.taskId, a.attempt);
      const seen = attempts.get(k);
      if (seen) seen.low = Math.min(seen.low, low);
      else attempts.set(k, { taskId: a.taskId, attempt: a.attempt, low });
    }
    const usage = await this.rows.usageOf(m, [...attempts.values()]);
    // Seqs an attempt has kept, read only for a batch that reaches below its highest kept seq.
    const kept = new Map<string, (seq: number) => boolean>();
    for (const [k, a] of attempts) {
      const u = usage.get(k);
      if (u && a.low <= u.lastSeq)
        kept.set(k, await this.rows.keptOf(m, a.taskId, a.attempt, a.low, u));
    }
    const rows: ChunkRow[] = [];
    const added = new Map<
      string,
      {
        taskId: string;
        attempt: number;
        lines: number;
        bytes: number;
        last: number;
        caps: AttemptLogCaps;
      }
    >();
    const results = group.map((a) => {
      const k = keyOf(a.taskId, a.attempt);
      const old = kept.get(k);
      const fresh: AttemptLogLine[] = [];
      const taken = new Set<number>();
      for (const l of [...a.lines].sort((x, y) => x.seq - y.seq)) {
        if (taken.has(l.seq) || old?.(l.seq)) continue;
        taken.add(l.seq);
        fresh.push(l);
      }
      if (fresh.length > 0) {
        // Kept now: a later append of the group sending them again finds them kept.
        kept.set(k, (seq) => taken.has(seq) || (old?.(seq) ?? false));
        const { rows: chunks, bytes } = chunksOf(a.taskId, a.attempt, fresh);
        rows.push(...chunks);
        const u = added.get(k) ?? {
          taskId: a.taskId,
          attempt: a.attempt,
          lines: 0,
          bytes: 0,
          last: -1,
          caps: a.caps,
        };
        u.lines += fresh.length;
        u.bytes += bytes;
        u.last = Math.max(u.last, fresh[fresh.length - 1].seq);
        added.set(k, u);
      }
      return { accepted: fresh.length, duplicates: a.lines.length - fresh.length };
    });
    if (rows.length === 0) return results;
    await this.sql.insertRows(
      m,
      'baton_task_log_chunk',
      rows as unknown as Record<string, unknown>[],
    );
    const grown = [...added.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    await this.rows.addUsage(
      m,
      grown.map(([, u]) => u),
    );
    for (const [k, u] of grown) {
      const before = usage.get(k);
      const lines = (before?.lines ?? 0) + u.lines;
      const bytes = (before?.bytes ?? 0) + u.bytes;
      if (lines > u.caps.maxLines || bytes > u.caps.maxBytes)
        await this.rows.dropOldest(m, u.taskId, u.attempt, u.caps);
    }
    return results;
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
    const limit = Math.max(1, Math.floor(q.limit));
    const where = ['task_id = ?', 'attempt = ?', 'last_seq > ?'];
    const params: unknown[] = [taskId, attempt, q.after];
    const min = q.minLevel && q.minLevel !== 'debug' ? LOG_LEVELS.indexOf(q.minLevel) : 0;
    if (min > 0) {
      // Chunks with no line at the level or above are not read.
      where.push('(levels & ?) <> 0');
      params.push(levelsFrom(LOG_LEVELS[min]));
    }
    const text = q.text?.toLowerCase();
    // Words that JSON writes as they are (printable ASCII but quotes and backslashes) are
    // looked for in the chunk's text first: a chunk without them is not read.
    if (text && /^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/.test(text)) {
      where.push("LOWER(body) LIKE ? ESCAPE '!'");
      params.push(`%${text.replace(/[!%_]/g, (c) => `!${c}`)}%`);
    }
    const got: AttemptLogLine[] = [];
    // By key, not by offset: chunks dropped for the caps while a page is read shift no others
    // past it (first_seq is unique within the attempt).
    for (let from: number | null = null; ;) {
      const { records } = await this.sql.exec(
        undefined,
        `SELECT first_seq, body FROM baton_task_log_chunk WHERE ${where.join(' AND ')}${from === null ? '' : ' AND first_seq > ?'}
          ORDER BY first_seq LIMIT ${CHUNKS_A_READ}`,
        from === null ? params : [...params, from],
      );
      const chunks = records as { first_seq: unknown; body: string }[];
      for (const c of chunks)
        for (const l of linesOf(c.body, Number(c.first_seq)))
          if (
            l.seq > q.after &&
            LOG_LEVELS.indexOf(l.level) >= min &&
            (!text || l.message.toLowerCase().includes(text))
          )
            got.push(l);
      if (chunks.length < CHUNKS_A_READ) break;
      // Chunks not read yet hold only lines from the last one's first seq on: enough below it
      // and the page is complete.
      from = Number(chunks[chunks.length - 1].first_seq);
      const bound = from;
      if (got.filter((l) => l.seq < bound).length > limit) break;
    }
    got.sort((a, b) => a.seq - b.seq);
    const lines: AttemptLogLine[] = [];
    let more = false;
    for (const l of got) {
      if (lines.length > 0 && lines[lines.length - 1].seq === l.seq) continue;
      if (lines.length === limit) {
        more = true;
        break;
      }
      lines.push(l);
    }
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
