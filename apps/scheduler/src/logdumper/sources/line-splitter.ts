import { Incoming } from '../log-processor.service';
import { LogRecord, MAX_LINE_CHARS, MalformedRecord, contentOfLine } from '../log-record';

const NEWLINE = 0x0a;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Complete lines cut from a chunk, and the offset just past the last one taken. */
export interface LineBatch {
  records: Incoming[];
  /** Offset (in the file) where the next read starts. */
  nextOffset: number;
}

/**
 * Cuts complete lines (ended by `\n`) out of `chunk`, read at `offset` of the file generation
 * `fileId` (`<inode>.g<generation>`). A partial last line is left for later: its writer has not
 * finished it. Each record's position is `<fileId>:<offset of the line start>`, which names the
 * line for good. `final` (the file was
 * rotated away) also takes a last line without a newline, since nobody will end it.
 */
export function splitLines(
  sourceId: string,
  fileId: string,
  chunk: Buffer,
  offset: number,
  maxLines: number,
  final: boolean,
): LineBatch {
  const records: Incoming[] = [];
  let start = 0;
  while (records.length < maxLines && start < chunk.length) {
    let end = chunk.indexOf(NEWLINE, start);
    if (end < 0) {
      if (!final) break;
      end = chunk.length;
    }
    const bytes = chunk.subarray(start, end);
    const position = `${fileId}:${offset + start}`;
    start = end + 1;
    const record = toRecord(sourceId, position, bytes);
    if (record) records.push(record);
  }
  return { records, nextOffset: offset + Math.min(start, chunk.length) };
}

function toRecord(sourceId: string, position: string, bytes: Buffer): Incoming | null {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return new MalformedRecord(`line at ${position} is not UTF-8`);
  }
  if (text.endsWith('\r')) text = text.slice(0, -1);
  if (text.trim() === '') return null;
  if (text.length > MAX_LINE_CHARS)
    return new MalformedRecord(`line at ${position} is longer than ${MAX_LINE_CHARS} characters`);
  return { sourceId, position, content: contentOfLine(text) } satisfies LogRecord;
}
