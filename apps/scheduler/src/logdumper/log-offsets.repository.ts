import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { LogOffsetEntity } from './log-offset.entity';

/**
 * Where a tailed file's reader stands: which file generation it reads, and the byte offset of the
 * next line in it. A generation is one life of one file: a new file at the path, a truncated file
 * read again from its start, or a reused inode each start a new one.
 */
export interface FilePosition {
  /** Inode of the file; null before the first file was seen. */
  fileId: string | null;
  /** Counts up with each generation the source has read; part of every line's position. */
  generation: number;
  offset: number;
  /** How many of the generation's first bytes `headHash` covers: min(1 KiB, offset). */
  headBytes: number;
  /** Hash of those bytes; a file that no longer starts with them is another generation. */
  headHash: string | null;
}

/** The reader a source's row names, as a refused claim reports it. */
export interface StoredClaim {
  fence: number;
  owner: string | null;
  updatedAt: number;
}

/** A claim's answer: taken (possibly over a stale row), or refused with the row that won. */
export type ClaimResult =
  | { claimed: true; takenOverFrom: StoredClaim | null }
  | { claimed: false; stored: StoredClaim | null };

/**
 * Stored read positions of tailed files. Every write carries the fence of the reader's lease and
 * is refused once a newer reader (higher fence) has claimed the source, so a reader that lost its
 * lease while paused cannot move the position back.
 */
@Injectable()
export class LogOffsetsRepository {
  constructor(private readonly db: DataSource) {}

  async get(sourceId: string): Promise<FilePosition | undefined> {
    const e = await this.db.manager.findOneBy(LogOffsetEntity, { source_id: sourceId });
    return e
      ? {
          fileId: e.file_id,
          generation: e.generation,
          offset: e.byte_offset,
          headBytes: e.head_bytes,
          headHash: e.head_hash,
        }
      : undefined;
  }

  /**
   * Records `fence` as the source's current reader. Refused when a reader with a higher fence
   * claimed it, unless that reader has not written the row for `staleAfterMs`: a fence can be
   * higher than any the lock backend now hands out (the lock driver was switched, or Redis lost
   * its fence counter), and the source must not stall for good. The displaced reader, if it still
   * runs, is stopped by the equality check of `save` and `touch`.
   */
  async claim(
    sourceId: string,
    fence: number,
    owner: string,
    now: number,
    staleAfterMs: number,
  ): Promise<ClaimResult> {
    let row = await this.db.manager.findOneBy(LogOffsetEntity, { source_id: sourceId });
    if (!row) {
      try {
        await this.db.manager.insert(LogOffsetEntity, {
          source_id: sourceId,
          file_id: null,
          generation: 0,
          head_bytes: 0,
          head_hash: null,
          byte_offset: 0,
          fence: 0,
          owner: null,
          updated_at: now,
        });
      } catch {
        // Another reader inserted it first: fine, the fenced update below decides.
      }
      row = await this.db.manager.findOneBy(LogOffsetEntity, { source_id: sourceId });
    }
    const before: StoredClaim | null = row
      ? { fence: row.fence, owner: row.owner, updatedAt: row.updated_at }
      : null;
    const r = await this.db.manager
      .createQueryBuilder()
      .update(LogOffsetEntity)
      .set({ fence, owner, updated_at: now })
      .where('source_id = :sourceId AND (fence <= :fence OR updated_at < :staleBefore)', {
        sourceId,
        fence,
        staleBefore: now - staleAfterMs,
      })
      .execute();
    if ((r.affected ?? 0) === 0) return { claimed: false, stored: before };
    return { claimed: true, takenOverFrom: before && before.fence > fence ? before : null };
  }

  /** Moves the position; false when the reader's fence is no longer the current one. */
  async save(sourceId: string, pos: FilePosition, fence: number, now: number): Promise<boolean> {
    const r = await this.db.manager
      .createQueryBuilder()
      .update(LogOffsetEntity)
      .set({
        file_id: pos.fileId,
        generation: pos.generation,
        byte_offset: pos.offset,
        head_bytes: pos.headBytes,
        head_hash: pos.headHash,
        updated_at: now,
      })
      .where('source_id = :sourceId AND fence = :fence', { sourceId, fence })
      .execute();
    return (r.affected ?? 0) > 0;
  }

  /** Shows the reader is alive (even when idle); false when its fence is no longer the current one. */
  async touch(sourceId: string, fence: number, now: number): Promise<boolean> {
    const r = await this.db.manager
      .createQueryBuilder()
      .update(LogOffsetEntity)
      .set({ updated_at: now })
      .where('source_id = :sourceId AND fence = :fence', { sourceId, fence })
      .execute();
    return (r.affected ?? 0) > 0;
  }
}
