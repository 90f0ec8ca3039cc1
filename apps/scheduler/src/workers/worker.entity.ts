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

  /** The worker contract it registered with (1.0.0: it named none, as workers of 1.0.0 did). */
  @Column({ type: 'varchar', length: 20, default: '1.0.0' })
  contract_version!: string;

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

  /** Since when a person drains it (no new tasks); null: not draining. */
  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  draining_since!: number | null;

  /** Why a person blacklisted it; null: no blacklist by hand. */
  @Column({ type: 'varchar', length: 500, nullable: true })
  manual_blacklist_reason!: string | null;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  manual_blacklist_since!: number | null;

  /** When the blacklist by hand ends by itself; null: when it is lifted. */
  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  manual_blacklist_until!: number | null;

  /** Since when it is unhealthy (stale or blacklisted), as WorkerHealthWatch recorded it. */
  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  unhealthy_since!: number | null;
}
