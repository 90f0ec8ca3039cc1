import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../database';

/** A create request seen under an Idempotency-Key: in flight, or its stored answer. */
@Entity('baton_idempotency')
@Index('ix_idempotency_created', ['created_at'])
export class IdempotencyRecordEntity {
  @PrimaryColumn({ type: 'varchar', length: 100 })
  tenant!: string;

  @PrimaryColumn({ type: 'varchar', length: 200 })
  idempotency_key!: string;

  @Column({ type: 'varchar', length: 64 })
  request_hash!: string;

  @Column({ type: 'varchar', length: 16 })
  state!: string;

  @Column({ type: 'int', nullable: true })
  response_status!: number | null;

  @Column({ type: 'text', nullable: true })
  response_body!: string | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  created_at!: number;
}
