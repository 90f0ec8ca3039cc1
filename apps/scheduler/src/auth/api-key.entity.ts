import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../database';

/** An API key of the public API: its secret is never stored, only its SHA-256. */
@Entity('baton_api_key')
export class ApiKeyEntity {
  @PrimaryColumn({ type: 'varchar', length: 26 })
  key_id!: string;

  @Index('ux_api_key_name', { unique: true })
  @Column({ type: 'varchar', length: 100 })
  name!: string;

  /** viewer, operator or admin. */
  @Column({ type: 'varchar', length: 16 })
  role!: string;

  /** The one tenant a key may reach (viewer and operator keys only); null: every tenant. */
  @Column({ type: 'varchar', length: 100, nullable: true })
  tenant!: string | null;

  /** The start of the secret, to recognise a key in a list or a log. */
  @Column({ type: 'varchar', length: 16 })
  prefix!: string;

  @Index('ux_api_key_hash', { unique: true })
  @Column({ type: 'varchar', length: 64 })
  key_hash!: string;

  @Column({ type: 'bigint', transformer: bigintNumber })
  created_at!: number;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  expires_at!: number | null;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  revoked_at!: number | null;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  last_used_at!: number | null;
}
