import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { bigintNumber } from '../database';

/** One line of a task's lifecycle log: who moved it, when, from, to, why, in which attempt. */
@Entity('baton_task_event')
@Index('ix_task_event_task', ['task_id', 'id'])
export class TaskEventEntity {
  /** BIGINT: mysql2 hands it over as a string; the repository converts. */
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string | number;

  @Column({ type: 'varchar', length: 32 })
  task_id!: string;

  @Column({ type: 'varchar', length: 16, nullable: true })
  from_status!: string | null;

  @Column({ type: 'varchar', length: 16 })
  to_status!: string;

  @Column({ type: 'varchar', length: 1000 })
  reason!: string;

  @Column({ type: 'varchar', length: 100 })
  actor!: string;

  @Column({ type: 'int' })
  attempt!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  created_at!: number;

  /** The same wait found this many times (the row is updated in place: waits are told once). */
  @Column({ type: 'int', default: 1 })
  repeats!: number;

  /** When the wait was last found (null: only at created_at). */
  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  last_at!: number | null;
}
