import { createHash } from 'node:crypto';
import { RecordContent } from './rule-matcher';

/** The kinds of source a record comes from; the kind prefixes the source id (`file:app`). */
export type SourceKind = 'http' | 'file' | 'stream';

/** Names of configured or ingesting sources. */
export const SOURCE_NAME_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/** A record's position: printable ASCII without spaces, unique within its source. */
export const POSITION_PATTERN = /^[\x21-\x7e]{1,120}$/;

/** Longest line (in characters) a record may carry; longer ones are dropped as malformed. */
export const MAX_LINE_CHARS = 64 * 1024;

/** One log record on its way to the rules. */
export interface LogRecord {
  /** `<kind>:<name>`, e.g. `file:app`. */
  sourceId: string;
  /** Where the record sits in its source: `<inode>.g<generation>:<byte offset>`, a stream entry id, a client sequence. */
  position: string;
  content: RecordContent;
}

export function sourceId(kind: SourceKind, name: string): string {
  return `${kind}:${name}`;
}

const KEY_LIMIT = 200;

/**
 * The idempotency key of the task a rule makes from a record. The record's place in its source
 * (not its content) is the identity, so replaying a source after a crash, a restart or a resent
 * batch finds the task it already made. Keys over the 200-character column are hashed, with the
 * readable head kept for people reading the task.
 */
export function idempotencyKeyOf(record: LogRecord, ruleId: string): string {
  const key = `log:${record.sourceId}:${record.position}:${ruleId}`;
  if (key.length <= KEY_LIMIT) return key;
  const digest = createHash('sha256').update(key).digest('hex');
  return `log:h:${digest}`;
}

/**
 * Reads a text line as a record's content: JSON-object lines also expose their fields to JSON
 * rules; any other line is plain text for regex rules.
 */
export function contentOfLine(text: string): RecordContent {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') && trimmed.endsWith('}')) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
        return { text, fields: parsed as Record<string, unknown> };
    } catch {
      // Not JSON after all: plain text.
    }
  }
  return { text, fields: null };
}

/** A record that cannot be read (counted as dropped, never fatal to its source). */
export class MalformedRecord {
  constructor(readonly reason: string) {}
}
