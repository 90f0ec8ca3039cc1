import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../database';

/** A tenant's limits as set through the API; a tenant without a row has the configured defaults. */
@Entity('baton_tenant_limit')
export class TenantLimitEntity {
  @PrimaryColumn({ type: 'varchar', length: 100 })
  tenant!: string;

  /** Most task starts per second over the fleet; null: no limit. */
  @Column({ type: 'int', nullable: true })
  rate_limit_per_sec!: number | null;

  /** Most tasks on a worker at once (CREATE, PREPARE, RUNNING) over the fleet; null: no limit. */
  @Column({ type: 'int', nullable: true })
  concurrency_limit!: number | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  updated_at!: number;
}
