import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../database';

/**
 * Where the reader of a tailed file has got to: every line before `byte_offset` of the file
 * generation (`file_id`, `generation`, `head_hash`) has its tasks.
 */
@Entity('baton_log_offset')
export class LogOffsetEntity {
  @PrimaryColumn({ type: 'varchar', length: 200 })
  source_id!: string;

  @Column({ type: 'varchar', length: 64, nullable: true })
  file_id!: string | null;

  /** Counts the files (and truncations) this source has read; part of every line's position. */
  @Column({ type: 'bigint', transformer: bigintNumber, default: 0 })
  generation!: number;

  /** How many of the generation's first bytes `head_hash` covers (up to 1 KiB). */
  @Column({ type: 'bigint', transformer: bigintNumber, default: 0 })
  head_bytes!: number;

  @Column({ type: 'varchar', length: 64, nullable: true })
  head_hash!: string | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  byte_offset!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  fence!: number;

  @Column({ type: 'varchar', length: 100, nullable: true })
  owner!: string | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  updated_at!: number;
}
