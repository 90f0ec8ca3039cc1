import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber, jsonText } from '../database';

/** A registered worker instance. */
@Entity('baton_worker')
export class WorkerEntity {
  @PrimaryColumn({ type: 'varchar', length: 100 })
  worker_id!: string;

  @Column({ type: 'varchar', length: 500 })
  url!: string;

  @Column({ type: 'text', transformer: jsonText })
  task_types!: string[];

  @Column({ type: 'varchar', length: 50 })
  version!: string;

  /** Most tasks the instance runs at once. */
  @Column({ type: 'int' })
  capacity!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  last_heartbeat_at!: number;

  @Column({ type: 'int' })
  consecutive_failures!: number;

  /** A node failing repeatedly is skipped until then. */
  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  blacklisted_until!: number | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  registered_at!: number;

  /** Since when it is unhealthy (stale or blacklisted), as WorkerHealthWatch recorded it. */
  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  unhealthy_since!: number | null;
}
