import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { bigintNumber, jsonText } from '../database';

/** A webhook subscription, or a tenant's signer of `callback_url` deliveries (kind `callback`). */
@Entity('baton_webhook')
@Index('ix_webhook_kind', ['kind', 'tenant'])
export class WebhookEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 })
  webhook_id!: string;

  @Column({ type: 'varchar', length: 16 })
  kind!: string;

  @Column({ type: 'varchar', length: 100, nullable: true })
  tenant!: string | null;

  @Column({ type: 'varchar', length: 2048, nullable: true })
  url!: string | null;

  @Column({ type: 'text', transformer: jsonText })
  events!: string[];

  @Column({ type: 'text', transformer: jsonText })
  task_types!: string[];

  @Column({ type: 'text', transformer: jsonText })
  labels!: Record<string, string>;

  @Column({ type: 'varchar', length: 500 })
  description!: string;

  @Column({ type: 'boolean' })
  enabled!: boolean;

  @Column({ type: 'varchar', length: 100 })
  secret!: string;

  @Column({ type: 'varchar', length: 100, nullable: true })
  previous_secret!: string | null;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  previous_secret_until!: number | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  disabled_reason!: string | null;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  failing_since!: number | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  created_at!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  updated_at!: number;

  @Column({ type: 'int' })
  version!: number;
}
