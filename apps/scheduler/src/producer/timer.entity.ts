import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../database';

/** A timed definition (see TimerModel). */
@Entity('baton_timer')
export class TimerEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  timer_id!: string;

  @Column({ type: 'varchar', length: 200 })
  name!: string;

  @Column({ type: 'varchar', length: 100 })
  tenant!: string;

  /** The Schedule as JSON (kind, cron + time zone, interval + anchor, or the instant). */
  @Column({ type: 'text' })
  schedule!: string;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  start_at!: number | null;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  end_at!: number | null;

  @Column({ type: 'int' })
  enabled!: number;

  @Column({ type: 'varchar', length: 16 })
  overlap_policy!: string;

  @Column({ type: 'varchar', length: 16 })
  misfire_policy!: string;

  @Column({ type: 'int' })
  misfire_grace_ms!: number;

  @Column({ type: 'text' })
  template!: string;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  next_fire_at!: number | null;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  last_fire_at!: number | null;

  @Column({ type: 'varchar', length: 32, nullable: true })
  last_task_id!: string | null;

  @Column({ type: 'int' })
  fire_count!: number;

  @Column({ type: 'int' })
  misfire_count!: number;

  @Column({ type: 'int' })
  skip_count!: number;

  @Column({ type: 'int' })
  version!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  created_at!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  updated_at!: number;
}

/** A scheduler instance taking part in distributed timer ownership (liveness is its lock lease). */
@Entity('baton_producer_member')
export class ProducerMemberEntity {
  @PrimaryColumn({ type: 'varchar', length: 100 })
  member_id!: string;

  @Column({ type: 'bigint', transformer: bigintNumber })
  joined_at!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  seen_at!: number;
}
