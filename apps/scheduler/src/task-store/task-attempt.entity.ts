import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { bigintNumber } from '../database';

/** One run attempt: which worker, when it started and ended, how. */
@Entity('baton_task_attempt')
@Index('ux_task_attempt', ['task_id', 'attempt'], { unique: true })
export class TaskAttemptEntity {
  /** BIGINT: mysql2 hands it over as a string; the repository converts. */
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string | number;

  @Column({ type: 'varchar', length: 32 })
  task_id!: string;

  @Column({ type: 'int' })
  attempt!: number;

  @Column({ type: 'varchar', length: 100, nullable: true })
  worker_id!: string | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  worker_url!: string | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  fence!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  started_at!: number;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  ended_at!: number | null;

  @Column({ type: 'varchar', length: 16, nullable: true })
  outcome!: string | null;

  @Column({ type: 'varchar', length: 2000, nullable: true })
  error!: string | null;

  /** When its worker is next to be told to drop it (null: nothing to tell). */
  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  drop_due_at!: number | null;

  @Column({ type: 'int', default: 0 })
  drop_tries!: number;

  /** When its worker was told to drop it (or was found gone). */
  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  dropped_at!: number | null;
}
