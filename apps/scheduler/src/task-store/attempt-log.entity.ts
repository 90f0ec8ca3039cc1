import { Column, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { bigintNumber } from '../database';

/** One line a worker logged during an attempt of a task (`PUT /v1/tasks/{id}/logs`). */
@Entity('baton_task_log_line')
@Index('ux_task_log_line', ['task_id', 'attempt', 'seq'], { unique: true })
export class TaskLogLineEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string | number;

  @Column({ type: 'varchar', length: 32 })
  task_id!: string;

  @Column({ type: 'int' })
  attempt!: number;

  /** The worker's number of the line within the attempt: a line sent again is kept once. */
  @Column({ type: 'int' })
  seq!: number;

  /** When the worker logged it (epoch ms). */
  @Column({ type: 'bigint', transformer: bigintNumber })
  at!: number;

  @Column({ type: 'varchar', length: 8 })
  level!: string;

  @Column({ type: 'varchar', length: 4000 })
  message!: string;

  /** Structured fields (JSON), or null. */
  @Column({ type: 'text', nullable: true })
  fields!: string | null;

  /** What it counts against the attempt's cap. */
  @Column({ type: 'int' })
  bytes!: number;
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
}
