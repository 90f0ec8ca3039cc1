import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { bigintNumber } from '../database';

/** A status change waiting for one consumer (the outbox of TaskChangeFeed). */
@Entity('baton_task_change')
@Index('ix_task_change_consumer', ['consumer', 'id'])
export class TaskChangeEntity {
  /** BIGINT: mysql2 hands it over as a string; the relay converts. */
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string | number;

  @Column({ type: 'varchar', length: 64 })
  consumer!: string;

  @Column({ type: 'varchar', length: 32 })
  task_id!: string;

  @Column({ type: 'varchar', length: 100 })
  task_type!: string;

  @Column({ type: 'varchar', length: 100 })
  tenant!: string;

  @Column({ type: 'varchar', length: 16, nullable: true })
  from_status!: string | null;

  @Column({ type: 'varchar', length: 16 })
  to_status!: string;

  @Column({ type: 'varchar', length: 16, nullable: true })
  outcome!: string | null;

  @Column({ type: 'int' })
  attempt!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  created_at!: number;
}
