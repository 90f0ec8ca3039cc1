import { Column, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { bigintNumber } from '../database';

/**
 * One notification to deliver: an event for one subscription (or one task's `callback_url`). Its
 * id is the `webhook-id` header, the same on every attempt. Pending until delivered or given up.
 */
@Entity('baton_webhook_message')
@Index('ix_webhook_message_next', ['webhook_id', 'status', 'next_at', 'seq'])
@Index('ix_webhook_message_order', ['webhook_id', 'task_id', 'seq'])
@Index('ix_webhook_message_created', ['webhook_id', 'created_at'])
export class WebhookMessageEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 })
  message_id!: string;

  @Column({ type: 'varchar', length: 40 })
  webhook_id!: string;

  @Column({ type: 'varchar', length: 40 })
  event_type!: string;

  @Column({ type: 'varchar', length: 100 })
  tenant!: string;

  @Column({ type: 'varchar', length: 32, nullable: true })
  task_id!: string | null;

  @Column({ type: 'varchar', length: 2048, nullable: true })
  url!: string | null;

  @Column({ type: 'text' })
  body!: string;

  @Column({ type: 'bigint', transformer: bigintNumber })
  seq!: number;

  @Column({ type: 'varchar', length: 16 })
  status!: string;

  @Column({ type: 'int' })
  attempts!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  next_at!: number;

  @Column({ type: 'int', nullable: true })
  last_status!: number | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  last_error!: string | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  created_at!: number;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  finished_at!: number | null;

  /** The instance that claimed it last (the one sending it while `claim_until` is ahead). */
  @Column({ type: 'varchar', length: 100, nullable: true })
  claimed_by!: string | null;

  /** Its claim's end (0: never claimed, or handed back): not due before then. */
  @Column({ type: 'bigint', default: 0, transformer: bigintNumber })
  claim_until!: number;
}

/** One attempt to deliver a message: the delivery log. */
@Entity('baton_webhook_attempt')
@Index('ix_webhook_attempt_message', ['message_id'])
export class WebhookAttemptEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string | number;

  @Column({ type: 'varchar', length: 40 })
  message_id!: string;

  @Column({ type: 'varchar', length: 40 })
  webhook_id!: string;

  @Column({ type: 'varchar', length: 32, nullable: true })
  task_id!: string | null;

  @Column({ type: 'int' })
  attempt!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  at!: number;

  @Column({ type: 'int', nullable: true })
  status_code!: number | null;

  @Column({ type: 'int' })
  latency_ms!: number;

  @Column({ type: 'text', nullable: true })
  response!: string | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  error!: string | null;

  /** The instance that made the attempt. */
  @Column({ type: 'varchar', length: 100, nullable: true })
  sent_by!: string | null;
}
