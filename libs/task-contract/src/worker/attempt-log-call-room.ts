/** A log call's budget: what one call to the scheduler may carry, and a line's share of it. */
import { LogLineDto } from '../dto/callback.dto';

/**
 * What one call carries at most, in JSON bytes and in JSON members and items: well under a
 * scheduler's defaults (a 1 MiB body, 20,000 members), so lines of 4,000 characters or with
 * many fields never make a call it refuses whole.
 */
const CALL_BYTES = 256 * 1024;
const CALL_MEMBERS = 8000;

/** JSON members and items of a value (what a scheduler's shape limit counts). */
function members(v: unknown): number {
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + 1 + members(x), 0);
  if (v && typeof v === 'object')
    return Object.values(v).reduce((n: number, x) => n + 1 + members(x), 0);
  return 0;
}

/** Printable ASCII but `"` and `\\`: what JSON writes as it is, a byte a character. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/**
 * What a line adds to a call: the UTF-8 bytes of its JSON, and its JSON members and items (what
 * a scheduler's shape limit counts), worked out from its parts: only its fields, and a message
 * with characters JSON escapes or UTF-8 widens, are written out to be measured.
 */
export function lineSize(line: LogLineDto): { bytes: number; members: number } {
  // {"seq":N,"at":"…","level":"…","message":"…"} and ,"fields":{…} when there are fields.
  const message = PLAIN.test(line.message)
    ? line.message.length
    : Buffer.byteLength(JSON.stringify(line.message)) - 2;
  let bytes = 40 + String(line.seq).length + line.at.length + line.level.length + message;
  let count = 4;
  // Fields whose JSON is nothing (a toJSON that answers undefined) are left out, as JSON does.
  const fields = line.fields === undefined ? undefined : JSON.stringify(line.fields);
  if (fields !== undefined) {
    bytes += 10 + Buffer.byteLength(fields);
    // Counted from the object: a member JSON leaves out (undefined) counts, which only errs high.
    count += 1 + members(line.fields);
  }
  return { bytes, members: count };
}

/** What is left of one call's budget of lines, bytes and JSON members. */
export class CallRoom {
  private bytes = CALL_BYTES;
  private members = CALL_MEMBERS;
  private taken = 0;

  constructor(private lines: number) {}

  left(): boolean {
    return this.lines > 0 && this.bytes > 0 && this.members > 0;
  }

  /** Takes the line when it fits (the first of a call always: a call carries at least one). */
  take(line: LogLineDto): boolean {
    const size = lineSize(line);
    const bytes = size.bytes + 1;
    const count = 1 + size.members;
    const fits = this.lines >= 1 && bytes <= this.bytes && count <= this.members;
    if (!fits && this.taken > 0) return false;
    this.taken++;
    this.lines--;
    this.bytes -= bytes;
    this.members -= count;
    return true;
  }
}
