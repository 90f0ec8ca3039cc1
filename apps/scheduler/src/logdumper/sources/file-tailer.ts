import { Logger } from '@nestjs/common';
import { Lease, LockProvider } from '@baton/locks';
import { LogOffsetsRepository } from '../log-offsets.repository';
import { LogProcessorService } from '../log-processor.service';
import { MalformedRecord, sourceId } from '../log-record';
import { LogFile, findRotated, findSuccessor, identify } from './log-file';
import { splitLines } from './line-splitter';

/** Bytes read at a time; a line longer than this is dropped. */
const CHUNK_BYTES = 256 * 1024;
/** Chunks processed in one pass before yielding to the next pass (keeps shutdown prompt). */
const STEPS_PER_PASS = 50;

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
 * keys (file inode + line offset + rule) find the tasks already made.
 *
 * Rotation: the open handle keeps the renamed file readable, so it is read to its end before the
 * reader moves to the new file at the path; after a restart, a stored inode that is no longer at
 * the path is looked for among the path's rotated siblings and finished first. A file that shrank
 * below the position was truncated in place (copytruncate) and is read again from its start.
 */
export class FileTailer {
  readonly sourceId: string;
  private readonly logger: Logger;
  private lease: Lease | null = null;
  private file: LogFile | null = null;
  /** Stored position in `file`: every line before it has its tasks. */
  private offset = 0;
  /** The last chunk ended inside an over-long line: skip to the next newline. */
  private skipping = false;
  /** The path now names another file: read this one to its very end, then move on. */
  private draining = false;

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
    if (!this.file && !(await this.openFromStoredPosition())) return;
    for (let step = 0; step < STEPS_PER_PASS; step++) {
      if (this.lease?.lost) return this.letGo('lease lost');
      if (!(await this.step())) return;
    }
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
    if (!(await this.offsets.claim(this.sourceId, lease.fence, this.opts.owner, this.now()))) {
      await lease.release().catch(() => undefined);
      return false;
    }
    this.lease = lease;
    this.logger.log(`reading ${this.opts.path} (fence ${lease.fence})`);
    return true;
  }

  private async letGo(why: string): Promise<void> {
    this.logger.warn(`stopped reading: ${why}`);
    await this.close();
  }

  /** Opens the file the stored position is in: at the path, or a rotated sibling. */
  private async openFromStoredPosition(): Promise<boolean> {
    const stored = await this.offsets.get(this.sourceId);
    const current = await identify(this.opts.path);
    if (stored?.fileId && stored.fileId !== current?.fileId) {
      const rotated = await findRotated(this.opts.path, stored.fileId);
      if (rotated) {
        this.logger.log(`finishing rotated ${rotated} from byte ${stored.offset}`);
        return this.use(await LogFile.open(rotated), stored.offset);
      }
      if (current)
        this.logger.warn(
          `file ${stored.fileId} is gone; lines after byte ${stored.offset} of it are lost`,
        );
    }
    if (!current) return false;
    const file = await LogFile.open(this.opts.path);
    return this.use(file, stored?.fileId === file.fileId ? stored.offset : 0);
  }

  private async use(file: LogFile, offset: number): Promise<boolean> {
    this.file = file;
    this.skipping = false;
    this.draining = false;
    // A file shorter than the position was truncated in place: read it again from the start.
    this.offset = (await file.size()) < offset ? 0 : offset;
    return true;
  }

  /** Reads and processes one chunk; false when there is nothing more to do this pass. */
  private async step(): Promise<boolean> {
    const file = this.file as LogFile;
    const chunk = await file.read(this.offset, CHUNK_BYTES);
    if (this.skipping) return this.skipRestOfLongLine(file, chunk);
    const { batch } = this.opts;
    let lines = splitLines(this.sourceId, file.fileId, chunk, this.offset, batch, this.draining);
    if (lines.nextOffset === this.offset) {
      if (chunk.length === CHUNK_BYTES) {
        // One line fills the whole chunk: drop it and skip what is left of it.
        this.skipping = true;
        const where = `${file.fileId}:${this.offset}`;
        lines = {
          records: [new MalformedRecord(`line at ${where} is over ${CHUNK_BYTES} bytes`)],
          nextOffset: this.offset + chunk.length,
        };
      } else if (this.draining) {
        return this.moveToNewFile(file);
      } else {
        return this.checkRotation(file);
      }
    }
    await this.processor.process(this.sourceId, lines.records);
    return this.commit(file.fileId, lines.nextOffset);
  }

  private async skipRestOfLongLine(file: LogFile, chunk: Buffer): Promise<boolean> {
    if (chunk.length === 0) return false;
    const nl = chunk.indexOf(0x0a);
    if (nl >= 0) this.skipping = false;
    return this.commit(file.fileId, this.offset + (nl >= 0 ? nl + 1 : chunk.length));
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
    if (current && current.size < this.offset) {
      this.logger.warn(`${this.opts.path} was truncated; reading it again from the start`);
      return this.commit(file.fileId, 0);
    }
    return false;
  }

  private async moveToNewFile(old: LogFile): Promise<boolean> {
    const nextPath = await findSuccessor(this.opts.path, old.fileId, await old.mtimeMs());
    this.logger.log(`finished ${old.path} (rotated); moving to ${nextPath}`);
    await old.close();
    this.file = null;
    const next = await LogFile.open(nextPath);
    await this.use(next, 0);
    return this.commit(next.fileId, 0);
  }

  /** Stores the position under the lease's fence; a refusal means another reader took over. */
  private async commit(fileId: string, offset: number): Promise<boolean> {
    const lease = this.lease as Lease;
    const saved = await this.offsets.save(
      this.sourceId,
      { fileId, offset },
      lease.fence,
      this.now(),
    );
    if (!saved) {
      await this.letGo('another reader holds a newer lease');
      return false;
    }
    this.offset = offset;
    return true;
  }
}
