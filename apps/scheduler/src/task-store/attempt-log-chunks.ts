/**
 * How an attempt's log lines are kept: in chunks, a row per batch a worker sent (a long batch in
 * a few rows), each chunk's lines as one JSON text. Pure: packing and unpacking only.
 *
 * A chunk's text is an array with a line each, `[seq step, time step, level, message]` and the
 * fields last when there are any: the seq and the time as steps from the line before (the first
 * line's from the chunk's `first_seq` and from 0), the level as its index in LOG_LEVELS. Lines
 * in a row differ by a seq and by a few milliseconds: a step is a digit or two where the whole
 * number is ten or thirteen, and what the database is sent and keeps is about a third less.
 */

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

/** A chunk as stored (less its id). */
export interface ChunkRow {
  task_id: string;
  attempt: number;
  first_seq: number;
  last_seq: number;
  line_count: number;
  bytes: number;
  levels: number;
  body: string;
}

/** A chunk's text is kept under this many characters (a batch longer is split). */
const CHUNK_CHARS = 256 * 1024;

/** The bit of a level in a chunk's `levels`. */
export const levelBit = (level: LogLevel): number => 1 << LOG_LEVELS.indexOf(level);

/** The bits of `level` and the levels above it. */
export const levelsFrom = (level: LogLevel): number =>
  LOG_LEVELS.slice(LOG_LEVELS.indexOf(level)).reduce((bits, l) => bits | levelBit(l), 0);

/** What a line counts against its attempt's byte cap: its message and fields, and 32 bytes. */
const countOf = (message: string, fields: string | undefined): number =>
  Buffer.byteLength(message) + (fields === undefined ? 0 : Buffer.byteLength(fields)) + 32;

/** A line's entry in a chunk's text (after `prev`), and what it counts against the cap. */
function entry(
  l: AttemptLogLine,
  prev: { seq: number; at: number },
): { text: string; bytes: number } {
  const message = JSON.stringify(l.message);
  const fields = l.fields ? JSON.stringify(l.fields) : undefined;
  const level = LOG_LEVELS.indexOf(l.level);
  const head = `[${l.seq - prev.seq},${l.at - prev.at},${level},${message}`;
  return {
    text: fields === undefined ? `${head}]` : `${head},${fields}]`,
    bytes: countOf(message, fields),
  };
}

/** What a line counts against its attempt's byte cap. */
export const lineBytes = (l: AttemptLogLine): number =>
  countOf(JSON.stringify(l.message), l.fields ? JSON.stringify(l.fields) : undefined);

/**
 * The chunks of an attempt's new lines (in seq order, none kept yet): as few as the size bound
 * allows, each with what it counts against the caps.
 */
export function chunksOf(
  taskId: string,
  attempt: number,
  lines: readonly AttemptLogLine[],
): { rows: ChunkRow[]; bytes: number } {
  const rows: ChunkRow[] = [];
  let total = 0;
  let part: string[] = [];
  let size = 0;
  let bytes = 0;
  let levels = 0;
  let prev = { seq: 0, at: 0 };
  let firstSeq = 0;
  const close = (last: number): void => {
    rows.push({
      task_id: taskId,
      attempt,
      first_seq: firstSeq,
      last_seq: last,
      line_count: part.length,
      bytes,
      levels,
      body: `[${part.join(',')}]`,
    });
    part = [];
    size = 0;
    bytes = 0;
    levels = 0;
  };
  lines.forEach((l, i) => {
    // A time JSON cannot hold would make the chunk unreadable: refused before anything is kept.
    if (!Number.isFinite(l.at)) throw new Error(`line ${l.seq}: its time is not a number`);
    if (part.length === 0) {
      firstSeq = l.seq;
      prev = { seq: l.seq, at: 0 };
    }
    let e = entry(l, prev);
    if (part.length > 0 && size + e.text.length > CHUNK_CHARS) {
      close(lines[i - 1].seq);
      firstSeq = l.seq;
      prev = { seq: l.seq, at: 0 };
      e = entry(l, prev);
    }
    part.push(e.text);
    size += e.text.length + 1;
    bytes += e.bytes;
    total += e.bytes;
    levels |= levelBit(l.level);
    prev = l;
  });
  if (part.length > 0) close(lines[lines.length - 1].seq);
  return { rows, bytes: total };
}

type Entry = [number, number, number, string] | [number, number, number, string, object];

/** A chunk's lines, as they were sent (`firstSeq`: the chunk's `first_seq`). */
export function linesOf(body: string, firstSeq: number): AttemptLogLine[] {
  let seq = firstSeq;
  let at = 0;
  return (JSON.parse(body) as Entry[]).map((e) => {
    seq += e[0];
    at += e[1];
    return {
      seq,
      at,
      level: LOG_LEVELS[e[2]],
      message: e[3],
      fields: (e[4] as Record<string, unknown> | undefined) ?? null,
    };
  });
}

/** A chunk's text for `lines` (what is left of it once its oldest lines were dropped). */
export function bodyOf(lines: readonly AttemptLogLine[], firstSeq: number): string {
  let prev = { seq: firstSeq, at: 0 };
  const parts = lines.map((l) => {
    const { text } = entry(l, prev);
    prev = l;
    return text;
  });
  return `[${parts.join(',')}]`;
}
