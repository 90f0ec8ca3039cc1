import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { bigintNumber, jsonText } from '../database';

/** A LogDumper rule. Never leaves the repository: services see LogRuleModel. */
@Entity('baton_log_rule')
@Index('ix_log_rule_enabled', ['enabled'])
export class LogRuleEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  rule_id!: string;

  @Column({ type: 'varchar', length: 100 })
  name!: string;

  @Column({ type: 'text', transformer: jsonText })
  sources!: string[];

  @Column({ type: 'text', transformer: jsonText })
  match_spec!: Record<string, unknown>;

  @Column({ type: 'text', transformer: jsonText })
  template!: Record<string, unknown>;

  /** The one tenant whose logs it reads; null: every log (a rule made by an admin). */
  @Column({ type: 'varchar', length: 100, nullable: true })
  tenant!: string | null;

  @Column({ type: 'boolean' })
  enabled!: boolean;

  @Column({ type: 'bigint', transformer: bigintNumber })
  created_at!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  updated_at!: number;
}
