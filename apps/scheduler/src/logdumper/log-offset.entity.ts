import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../database/column-transformers';

/** Where the reader of a tailed file has got to: every line before `byte_offset` has its tasks. */
@Entity('baton_log_offset')
export class LogOffsetEntity {
  @PrimaryColumn({ type: 'varchar', length: 200 })
  source_id!: string;

  @Column({ type: 'varchar', length: 64, nullable: true })
  file_id!: string | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  byte_offset!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  fence!: number;

  @Column({ type: 'varchar', length: 100, nullable: true })
  owner!: string | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  updated_at!: number;
}
