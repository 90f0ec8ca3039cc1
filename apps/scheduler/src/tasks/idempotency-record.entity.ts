import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../database';

/** A create request seen under an Idempotency-Key: in flight, or its stored answer. */
@Entity('baton_idempotency')
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
