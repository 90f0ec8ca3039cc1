import { Column, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { bigintNumber } from '../database';

/**
 * Lines a worker logged during an attempt of a task (`PUT /v1/tasks/{id}/logs`), kept as they
 * came: one row per batch (a long batch in a few), its lines in `body`. A row a batch, not a row
 * a line: the write of ten lines costs about what the write of one does.
 */
@Entity('baton_task_log_chunk')
@Index('ux_task_log_chunk', ['task_id', 'attempt', 'first_seq'], { unique: true })
@Index('ix_task_log_chunk_last', ['task_id', 'attempt', 'last_seq'])
export class TaskLogChunkEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string | number;

  @Column({ type: 'varchar', length: 32 })
  task_id!: string;

  @Column({ type: 'int' })
  attempt!: number;

  /**
   * The lowest seq the chunk was written with: every line in it has this seq or a higher one
   * (lines dropped by the caps leave it as it was). A batch sent again starts at the same seq,
   * so the key keeps two schedulers from writing the same lines twice at once.
   */
  @Column({ type: 'int' })
  first_seq!: number;

  /** The highest seq in the chunk. */
  @Column({ type: 'int' })
  last_seq!: number;

  @Column({ type: 'int' })
  line_count!: number;

  /** What its lines count against the attempt's cap. */
  @Column({ type: 'int' })
  bytes!: number;

  /** The levels of its lines, a bit each (debug 1, info 2, warn 4, error 8): a filter skips it. */
  @Column({ type: 'int' })
  levels!: number;

  /** Its lines, oldest first, as JSON: `[[seq, at, level, message, fields?], ...]`. */
  @Column({ type: 'text' })
  body!: string;
}

/** How much of its cap an attempt's log uses, and how many of its oldest lines were dropped. */
@Entity('baton_task_log_usage')
export class TaskLogUsageEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  task_id!: string;

  @PrimaryColumn({ type: 'int' })
  attempt!: number;

  @Column({ type: 'int' })
  line_count!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  byte_count!: number;

  @Column({ type: 'int' })
  dropped!: number;

  /** The highest seq kept: a batch above it is new, and nothing kept need be read to know it. */
  @Column({ type: 'int' })
  last_seq!: number;
}
