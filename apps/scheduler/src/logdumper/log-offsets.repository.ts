import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { LogOffsetEntity } from './log-offset.entity';

/** Where a tailed file's reader stands: file identity and the byte offset of the next line. */
export interface FilePosition {
  fileId: string | null;
  offset: number;
}

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
    return e ? { fileId: e.file_id, offset: e.byte_offset } : undefined;
  }

  /** Records `fence` as the source's current reader; false when a newer reader claimed it. */
  async claim(sourceId: string, fence: number, owner: string, now: number): Promise<boolean> {
    const exists = await this.db.manager.existsBy(LogOffsetEntity, { source_id: sourceId });
    if (!exists) {
      try {
        await this.db.manager.insert(LogOffsetEntity, {
          source_id: sourceId,
          file_id: null,
          byte_offset: 0,
          fence: 0,
          owner: null,
          updated_at: now,
        });
      } catch {
        // Another reader inserted it first: fine, the fenced update below decides.
      }
    }
    const r = await this.db.manager
      .createQueryBuilder()
      .update(LogOffsetEntity)
      .set({ fence, owner, updated_at: now })
      .where('source_id = :sourceId AND fence <= :fence', { sourceId, fence })
      .execute();
    return (r.affected ?? 0) > 0;
  }

  /** Moves the position; false when the reader's fence is no longer the current one. */
  async save(sourceId: string, pos: FilePosition, fence: number, now: number): Promise<boolean> {
    const r = await this.db.manager
      .createQueryBuilder()
      .update(LogOffsetEntity)
      .set({ file_id: pos.fileId, byte_offset: pos.offset, updated_at: now })
      .where('source_id = :sourceId AND fence = :fence', { sourceId, fence })
      .execute();
    return (r.affected ?? 0) > 0;
  }
}
