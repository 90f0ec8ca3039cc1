import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { bigintNumber, jsonText } from '../database';

/** One change of configuration through the API: who, when, what. */
@Entity('baton_audit')
@Index('ix_audit_at', ['at'])
export class AuditEntryEntity {
  /** A ULID: entries sort by it in the order they were made. */
  @PrimaryColumn({ type: 'varchar', length: 26 })
  audit_id!: string;

  @Column({ type: 'bigint', transformer: bigintNumber })
  at!: number;

  /** `key:<name>` of the API key, or `api` with the API open. */
  @Column({ type: 'varchar', length: 120 })
  actor!: string;

  /** What was done: `timer.update`, `api-key.revoke`, ... */
  @Column({ type: 'varchar', length: 40 })
  action!: string;

  /** The id (or name) of what was changed. */
  @Column({ type: 'varchar', length: 200, nullable: true })
  target!: string | null;

  /** The request's body, as sent. */
  @Column({ type: 'text', nullable: true, transformer: jsonText })
  detail!: unknown;
}
