import { Logger } from '@nestjs/common';
import { Lease, LockProvider } from '@baton/locks';
import { crashPoint } from '../../common';
import { FilePosition, LogOffsetsRepository, StoredClaim } from '../log-offsets.repository';
import { LogProcessorService } from '../log-processor.service';
import { MalformedRecord, sourceId } from '../log-record';
import { HEAD_BYTES, LogFile, findRotated, findSuccessor, hashHead, identify } from './log-file';
import { splitLines } from './line-splitter';

/** Bytes read at a time; a line longer than this is dropped. */
const CHUNK_BYTES = 256 * 1024;
/** Chunks processed in one pass before yielding to the next pass (keeps shutdown prompt). */
const STEPS_PER_PASS = 50;
/** A stored claim not written for this many lease lengths is taken over even under a lower fence. */
const STALE_CLAIM_LEASES = 3;
/** A refused claim is logged at most this often (the reader retries every poll). */
const REFUSAL_LOG_MS = 30_000;
const EMPTY = Buffer.alloc(0);

export interface FileTailerOptions {
  name: string;
  path: string;
  owner: string;
  batch: number;
  leaseMs: number;
}

/**
 * Tails one file for the LogDumper. Only the holder of the file's lease reads it, and the stored
 * position is written under the lease's fence. A position is stored only after the tasks of every
 * line before it exist, so a crash replays at most the lines of one batch, and their idempotency
 * keys (file generation + line offset + rule) find the tasks already made.
 *
 * A file generation is one life of one file: its inode, a counter stored with the position, and
 * the hash of its first bytes (up to 1 KiB). A new file at the path, a file truncated in place
 * (copytruncate) and an inode reused after a deletion each start a new generation read from byte
 * 0, and since the counter is part of every line's position their lines never reuse an old key.
 * A truncation is noticed when the file got shorter than the position, or when it no longer starts
 * with the bytes its generation started with (the writer wrote past the old position before the
 * reader looked): the head is compared after every read, so a chunk is used only if the file was
 * still the same generation when it was read.
 *
 * Rotation: the open handle keeps the renamed file readable, so it is read to its end before the
 * reader moves to the new file at the path; after a restart, a stored inode that is no longer at
 * the path is looked for among the path's rotated siblings and finished first.
 */
export class FileTailer {
  readonly sourceId: string;
  private readonly logger: Logger;
  private lease: Lease | null = null;
  private file: LogFile | null = null;
  /** Generation of `file` being read: counts up with each file or truncation of this source. */
  private generation = 0;
  /** Stored position in `file`: every line before it has its tasks. */
  private offset = 0;
  /** The generation's first min(HEAD_BYTES, offset) bytes, as read. */
  private head: Buffer = EMPTY;
  /** The last chunk ended inside an over-long line: skip to the next newline. */
  private skipping = false;
  /** The path now names another file: read this one to its very end, then move on. */
  private draining = false;
  /** When the row was last written under the current lease (a commit or a touch). */
  private lastStoredAt = 0;
  private lastRefusalLog = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly opts: FileTailerOptions,
    private readonly locks: LockProvider,
    private readonly offsets: LogOffsetsRepository,
    private readonly processor: LogProcessorService,
    private readonly now: () => number,
  ) {
    this.sourceId = sourceId('file', opts.name);
    this.logger = new Logger(`LogDumper ${this.sourceId}`);
  }

  /** One pass: (re)take the lease if needed, then read until caught up. */
  async pass(): Promise<void> {
    if (!(await this.holdLease())) return;
    if (this.file || (await this.openFromStoredPosition())) {
      for (let step = 0; step < STEPS_PER_PASS; step++) {
        if (this.lease?.lost) return this.letGo('lease lost');
        if (!(await this.step())) break;
      }
    }
    await this.keepAlive();
  }

  async close(): Promise<void> {
    await this.file?.close();
    this.file = null;
    const lease = this.lease;
    this.lease = null;
    await lease?.release().catch(() => undefined);
  }

  private async holdLease(): Promise<boolean> {
    if (this.lease && !this.lease.lost) return true;
    if (this.lease) await this.letGo('lease lost');
    const lease = await this.locks.tryAcquire(`logdumper:file:${this.opts.name}`, {
      ttlMs: this.opts.leaseMs,
      autoRenew: true,
    });
    if (!lease) return false;
    const now = this.now();
    const staleMs = STALE_CLAIM_LEASES * this.opts.leaseMs;
    const claim = await this.offsets.claim(
      this.sourceId,
      lease.fence,
      this.opts.owner,
      now,
      staleMs,
    );
    if (!claim.claimed) {
      await lease.release().catch(() => undefined);
      if (now - this.lastRefusalLog >= REFUSAL_LOG_MS) {
        this.lastRefusalLog = now;
        this.logger.warn(
          `not reading ${this.opts.path}: the lock gave fence ${lease.fence}, but the stored ` +
            `position is held under ${describe(claim.stored, now)}; it is taken over once that ` +
            `reader has not written it for ${staleMs} ms`,
        );
      }
      return false;
    }
    if (claim.takenOverFrom)
      this.logger.warn(
        `took ${this.opts.path} over from ${describe(claim.takenOverFrom, now)}, above the lock's ` +
          `fence ${lease.fence}: that reader is gone (was the lock driver switched, or did Redis ` +
          `lose its fence counter?)`,
      );
    this.lease = lease;
    this.lastStoredAt = now;
    this.lastRefusalLog = Number.NEGATIVE_INFINITY;
    this.logger.log(`reading ${this.opts.path} (fence ${lease.fence})`);
    return true;
  }

  /** Refreshes the row's updated_at while the lease is held, idle or not, so it is never stale. */
  private async keepAlive(): Promise<void> {
    const lease = this.lease;
    const now = this.now();
    if (!lease || now - this.lastStoredAt < this.opts.leaseMs / 2) return;
    if (!(await this.offsets.touch(this.sourceId, lease.fence, now)))
      return this.letGo('another reader holds a newer lease');
    this.lastStoredAt = now;
  }

  private async letGo(why: string): Promise<void> {
    this.logger.warn(`stopped reading: ${why}`);
    await this.close();
  }

  /** Opens the file the stored position is in (at the path or a rotated sibling), or a new one. */
  private async openFromStoredPosition(): Promise<boolean> {
    const stored = await this.offsets.get(this.sourceId);
    const current = await identify(this.opts.path);
    if (stored?.fileId) {
      const where =
        current?.fileId === stored.fileId
          ? this.opts.path
          : await findRotated(this.opts.path, stored.fileId);
      if (where) {
        const file = await LogFile.open(where);
        if (await this.resume(file, stored)) {
          if (where !== this.opts.path)
            this.logger.log(`finishing rotated ${where} from byte ${stored.offset}`);
          return true;
        }
        await file.close();
        this.logger.warn(
          `${where} (inode ${stored.fileId}) is no longer the file read before: truncated or ` +
            `rewritten; reading it as a new file`,
        );
      } else if (current) {
        this.logger.warn(
          `file ${stored.fileId} is gone; lines after byte ${stored.offset} of it are lost`,
        );
      }
    }
    if (!current) return false;
    return this.startGeneration(await LogFile.open(this.opts.path), stored?.generation ?? 0);
  }

  /** Takes up the stored generation in `file` if it is still that generation. */
  private async resume(file: LogFile, stored: FilePosition): Promise<boolean> {
    if (file.fileId !== stored.fileId || (await file.size()) < stored.offset) return false;
    const head = await file.read(0, stored.headBytes);
    if (head.length !== stored.headBytes || hashHead(head) !== (stored.headHash ?? hashHead(EMPTY)))
      return false;
    this.file = file;
    this.generation = stored.generation;
    this.offset = stored.offset;
    this.head = head;
    this.skipping = false;
    this.draining = false;
    return true;
  }

  /** Starts the next generation in `file` at byte 0, stored before any of its lines is used. */
  private async startGeneration(file: LogFile, previous: number): Promise<boolean> {
    this.file = file;
    this.generation = previous + 1;
    this.offset = 0;
    this.head = EMPTY;
    this.skipping = false;
    this.draining = false;
    return this.commit(0);
  }

  /** The prefix of every line position of the generation read: `<inode>.g<generation>`. */
  private get generationKey(): string {
    return `${(this.file as LogFile).fileId}.g${this.generation}`;
  }

  /** Reads and processes one chunk; false when there is nothing more to do this pass. */
  private async step(): Promise<boolean> {
    const file = this.file as LogFile;
    const chunk = await file.read(this.offset, CHUNK_BYTES);
    // Checked after the read: if the file still starts as its generation did, the chunk is its.
    if (!(await this.sameGeneration(file)))
      return this.truncated(file, 'no longer starts with the bytes it started with');
    if (this.skipping) return this.skipRestOfLongLine(chunk);
    const { batch } = this.opts;
    const key = this.generationKey;
    let lines = splitLines(this.sourceId, key, chunk, this.offset, batch, this.draining);
    if (lines.nextOffset === this.offset) {
      if (chunk.length === CHUNK_BYTES) {
        // One line fills the whole chunk: drop it and skip what is left of it.
        this.skipping = true;
        lines = {
          records: [
            new MalformedRecord(`line at ${key}:${this.offset} is over ${CHUNK_BYTES} bytes`),
          ],
          nextOffset: this.offset + chunk.length,
        };
      } else if (this.draining) {
        return this.moveToNewFile(file);
      } else {
        return this.checkRotation(file);
      }
    }
    await this.processor.process(this.sourceId, lines.records);
    crashPoint('after-log-tasks');
    return this.commit(lines.nextOffset, chunk);
  }

  /** Whether `file` still starts with the bytes its generation started with. */
  private async sameGeneration(file: LogFile): Promise<boolean> {
    if (this.head.length === 0) return true;
    return (await file.read(0, this.head.length)).equals(this.head);
  }

  private async skipRestOfLongLine(chunk: Buffer): Promise<boolean> {
    if (chunk.length === 0) return false;
    const nl = chunk.indexOf(0x0a);
    if (nl >= 0) this.skipping = false;
    return this.commit(this.offset + (nl >= 0 ? nl + 1 : chunk.length), chunk);
  }

  /** At the end of the open file: has the path moved on to another file, or been truncated? */
  private async checkRotation(file: LogFile): Promise<boolean> {
    const current = await identify(this.opts.path);
    if (current && current.fileId !== file.fileId) {
      // Rotated. Lines may have landed in the old file since the last read, and a last line
      // without a newline will never be ended now: read it once more to its very end.
      this.draining = true;
      return true;
    }
    if ((await file.size()) < this.offset) return this.truncated(file, 'got shorter');
    return false;
  }

  /** The open file was truncated in place: a new generation of it, read from its start. */
  private async truncated(file: LogFile, how: string): Promise<boolean> {
    this.logger.warn(
      `${file.path} ${how} (truncated at byte ${this.offset} of generation ` +
        `${this.generation}): reading it again from the start as generation ${this.generation + 1}`,
    );
    return this.startGeneration(file, this.generation);
  }

  private async moveToNewFile(old: LogFile): Promise<boolean> {
    const nextPath = await findSuccessor(this.opts.path, old.fileId, await old.mtimeMs());
    this.logger.log(`finished ${old.path} (rotated); moving to ${nextPath}`);
    await old.close();
    this.file = null;
    return this.startGeneration(await LogFile.open(nextPath), this.generation);
  }

  /**
   * Stores the position under the lease's fence; a refusal means another reader took over.
   * `chunk` (read at the current offset) supplies the head bytes the new offset adds.
   */
  private async commit(offset: number, chunk: Buffer = EMPTY): Promise<boolean> {
    const lease = this.lease as Lease;
    const file = this.file as LogFile;
    let head = offset === 0 ? EMPTY : this.head;
    const headEnd = Math.min(HEAD_BYTES, offset);
    if (head.length < headEnd)
      head = Buffer.concat([
        head,
        chunk.subarray(head.length - this.offset, headEnd - this.offset),
      ]);
    const now = this.now();
    const saved = await this.offsets.save(
      this.sourceId,
      {
        fileId: file.fileId,
        generation: this.generation,
        offset,
        headBytes: head.length,
        headHash: hashHead(head),
      },
      lease.fence,
      now,
    );
    if (!saved) {
      await this.letGo('another reader holds a newer lease');
      return false;
    }
    this.offset = offset;
    this.head = head;
    this.lastStoredAt = now;
    return true;
  }
}

function describe(c: StoredClaim | null, now: number): string {
  if (!c) return 'an unknown reader';
  return `fence ${c.fence} of ${c.owner ?? 'nobody'} (written ${now - c.updatedAt} ms ago)`;
}
