import { systemClock } from '@baton/time';
import { Logger } from '@nestjs/common';
import { crashPoint } from '../../common';
import { Incoming, LogProcessorService } from '../log-processor.service';
import { MAX_LINE_CHARS, MalformedRecord, contentOfLine, sourceId } from '../log-record';
import { RedisStreamDriver, StreamEntry } from './redis-stream.driver';

/** Claim rounds per pass: each takes up to `batch` entries of dead consumers. */
const CLAIM_ROUNDS = 10;

export interface StreamConsumerOptions {
  name: string;
  batch: number;
  claimIdleMs: number;
  blockMs: number;
}

/**
 * Reads an entry as a record. `json` (a JSON object) or `line` (text) carry the record; an entry
 * with neither is a structured record of its own fields. Position: the entry id.
 */
export function entryToRecord(source: string, entry: StreamEntry): Incoming {
  const f = entry.fields;
  if (!f || Object.keys(f).length === 0) return new MalformedRecord(`entry ${entry.id} is empty`);
  if ('json' in f) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(f.json);
    } catch {
      return new MalformedRecord(`entry ${entry.id}: json is not valid JSON`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      return new MalformedRecord(`entry ${entry.id}: json is not a JSON object`);
    return {
      sourceId: source,
      position: entry.id,
      content: { text: f.json, fields: parsed as Record<string, unknown> },
    };
  }
  const text = 'line' in f ? f.line : JSON.stringify(f);
  if (text.length > MAX_LINE_CHARS)
    return new MalformedRecord(`entry ${entry.id} is longer than ${MAX_LINE_CHARS} characters`);
  if ('line' in f) return { sourceId: source, position: entry.id, content: contentOfLine(text) };
  return { sourceId: source, position: entry.id, content: { text, fields: { ...f } } };
}

/**
 * Consumes one Redis stream in the LogDumper's consumer group. An entry is acknowledged only
 * after its tasks exist (or it was dropped or matched nothing), so a consumer that dies leaves it
 * pending: its own restart reads its pending list first, and any other consumer claims entries
 * idle longer than `claimIdleMs`. Replays are harmless: the entry id is the idempotency key.
 *
 * Its own pending list can only fill when a pass fails between reading and acknowledging, so it is
 * read at start and after a failed pass, not every pass; dead consumers' entries cannot be claimed
 * before they are `claimIdleMs` idle, so XAUTOCLAIM runs every `claimIdleMs / 2`.
 */
export class StreamConsumer {
  readonly sourceId: string;
  private readonly logger: Logger;
  private groupReady = false;
  /** Own pending entries may exist: at start, and after a pass that failed. */
  private ownPendingToDrain = true;
  private lastClaimAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly opts: StreamConsumerOptions,
    private readonly stream: RedisStreamDriver,
    private readonly processor: LogProcessorService,
    private readonly now: () => number = () => systemClock.now(),
  ) {
    this.sourceId = sourceId('stream', opts.name);
    this.logger = new Logger(`LogDumper ${this.sourceId}`);
  }

  async pass(): Promise<void> {
    try {
      if (!this.groupReady) {
        await this.stream.ensureGroup();
        this.groupReady = true;
      }
      if (this.ownPendingToDrain) {
        await this.drainOwnPending();
        this.ownPendingToDrain = false;
      }
      const now = this.now();
      if (now - this.lastClaimAt >= this.opts.claimIdleMs / 2) {
        // A backlog larger than one call takes is worked off on the next passes.
        if (await this.claimFromDeadConsumers()) this.lastClaimAt = now;
      }
      await this.handle(await this.stream.readNew(this.opts.batch, this.opts.blockMs));
    } catch (err) {
      // Entries read in this pass may be left pending to this consumer: read them next time.
      this.ownPendingToDrain = true;
      throw err;
    }
  }

  close(): Promise<void> {
    return this.stream.close();
  }

  /** Entries delivered to this consumer earlier and not acknowledged (a failed pass). */
  private async drainOwnPending(): Promise<void> {
    let after = '0';
    for (;;) {
      const entries = await this.stream.readOwnPending(after, this.opts.batch);
      if (entries.length === 0) return;
      await this.handle(entries);
      after = entries[entries.length - 1].id;
    }
  }

  /** True when the group's pending list was scanned to its end. */
  private async claimFromDeadConsumers(): Promise<boolean> {
    let cursor = '0-0';
    for (let round = 0; round < CLAIM_ROUNDS; round++) {
      const { next, entries } = await this.stream.claimStale(
        this.opts.claimIdleMs,
        cursor,
        this.opts.batch,
      );
      if (entries.length) {
        this.logger.log(`claimed ${entries.length} entries a stopped consumer left pending`);
        await this.handle(entries);
      }
      if (next === '0-0') return true;
      cursor = next;
    }
    return false;
  }

  private async handle(entries: readonly StreamEntry[]): Promise<void> {
    if (entries.length === 0) return;
    // A deleted entry (trimmed while pending) has nothing left to process: only acknowledge it.
    const live = entries.filter((e) => e.fields !== null);
    await this.processor.process(
      this.sourceId,
      live.map((e) => entryToRecord(this.sourceId, e)),
    );
    crashPoint('after-log-tasks');
    await this.stream.ack(entries.map((e) => e.id));
  }
}
