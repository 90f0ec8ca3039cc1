import { Injectable } from '@nestjs/common';
import { isPlainObject } from './checks';
import { IngestLogsDto, IngestResultDto, RecordErrorDto } from './dto/ingest.dto';
import {
  LogRecord,
  MAX_LINE_CHARS,
  MalformedRecord,
  POSITION_PATTERN,
  contentOfLine,
  sourceId,
} from './log-record';
import { Incoming, LogProcessorService } from './log-processor.service';

const RECORD_FIELDS = new Set(['position', 'line', 'fields']);

/** Reads one record of an HTTP batch; a record that cannot be read is kept as malformed. */
export function readHttpRecord(source: string, raw: unknown): Incoming {
  if (!isPlainObject(raw)) return new MalformedRecord('a record must be a JSON object');
  const extra = Object.keys(raw).filter((k) => !RECORD_FIELDS.has(k));
  if (extra.length) return new MalformedRecord(`unknown field(s): ${extra.join(', ')}`);
  const p = raw.position;
  const position =
    typeof p === 'number' && Number.isSafeInteger(p) && p >= 0
      ? String(p)
      : typeof p === 'string' && POSITION_PATTERN.test(p)
        ? p
        : undefined;
  if (position === undefined)
    return new MalformedRecord(
      'position must be a non-negative integer or 1-120 printable ASCII characters',
    );
  const { line, fields } = raw;
  if ((line === undefined) === (fields === undefined))
    return new MalformedRecord('a record has exactly one of line or fields');
  const id = sourceId('http', source);
  if (line !== undefined) {
    if (typeof line !== 'string') return new MalformedRecord('line must be a string');
    if (line.length > MAX_LINE_CHARS)
      return new MalformedRecord(`line is longer than ${MAX_LINE_CHARS} characters`);
    return { sourceId: id, position, content: contentOfLine(line) } satisfies LogRecord;
  }
  if (!isPlainObject(fields)) return new MalformedRecord('fields must be a JSON object');
  const text = JSON.stringify(fields);
  if (text.length > MAX_LINE_CHARS)
    return new MalformedRecord(`fields are longer than ${MAX_LINE_CHARS} characters of JSON`);
  return { sourceId: id, position, content: { text, fields } } satisfies LogRecord;
}

/**
 * HTTP ingest: a batch from one source. Malformed records are dropped and listed, the rest are
 * processed; the answer comes once every task of the batch exists, so a client that got no answer
 * simply sends the batch again (positions make the replay create nothing new).
 */
@Injectable()
export class LogIngestService {
  constructor(private readonly processor: LogProcessorService) {}

  async ingest(dto: IngestLogsDto): Promise<IngestResultDto> {
    const records = dto.records.map((raw) => readHttpRecord(dto.source, raw));
    const outcomes = await this.processor.process(
      sourceId('http', dto.source),
      records,
      dto.tenant,
    );
    const result: IngestResultDto = {
      source: dto.source,
      accepted: 0,
      dropped: 0,
      unmatched: 0,
      matched: 0,
      created: 0,
      duplicates: 0,
      rejected: 0,
      errors: [],
    };
    outcomes.forEach((o, index) => {
      const r = records[index];
      const position = r instanceof MalformedRecord ? null : r.position;
      if (o.dropped) {
        result.dropped++;
        result.errors.push({ index, position, outcome: 'dropped', reason: o.reasons.join('; ') });
        return;
      }
      result.accepted++;
      if (o.matched === 0) result.unmatched++;
      result.matched += o.matched;
      result.created += o.created;
      result.duplicates += o.duplicate;
      result.rejected += o.rejected;
      for (const reason of o.reasons)
        result.errors.push({
          index,
          position,
          outcome: 'rejected',
          reason,
        } satisfies RecordErrorDto);
    });
    return result;
  }
}
