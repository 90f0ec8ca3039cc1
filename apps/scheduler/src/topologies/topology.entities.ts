import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { bigintNumber, jsonText } from '../database';
import { TopologySpec } from './topology-definition';

/** One version of a topology definition: a new row on every change, never edited. */
@Entity('baton_topology')
export class TopologyEntity {
  @PrimaryColumn({ type: 'varchar', length: 100 })
  name!: string;

  @PrimaryColumn({ type: 'int' })
  version!: number;

  @Column({ type: 'varchar', length: 100, nullable: true })
  tenant!: string | null;

  @Column({ type: 'text', transformer: jsonText })
  spec!: TopologySpec;

  @Column({ type: 'varchar', length: 200 })
  created_by!: string;

  @Column({ type: 'bigint', transformer: bigintNumber })
  created_at!: number;
}

/** A run of a definition; its status is its centre task's (run_id is that task's id). */
@Entity('baton_topology_run')
@Index('ix_topology_run_name', ['name', 'created_at'])
@Index('ix_topology_run_wake', ['active', 'wake_at'])
export class TopologyRunEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  run_id!: string;

  @Column({ type: 'varchar', length: 100 })
  name!: string;

  @Column({ type: 'int' })
  version!: number;

  @Column({ type: 'varchar', length: 100 })
  tenant!: string;

  @Column({ type: 'text', transformer: jsonText })
  input!: Record<string, unknown>;

  @Column({ type: 'int' })
  depth!: number;

  @Column({ type: 'varchar', length: 32, nullable: true })
  parent_run_id!: string | null;

  /** 1 until the run is over: the sweeper looks at these. */
  @Column({ type: 'int' })
  active!: number;

  /** When a wait of the run ends (the sweeper evaluates it then). */
  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  wake_at!: number | null;

  /** How long the run may take (null: no deadline). */
  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  deadline_ms!: number | null;

  /** When its deadline passes: its start (or last reopening) plus deadline_ms. */
  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  deadline_at!: number | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  created_at!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  updated_at!: number;
}

/** What was decided for a node of a run (node-state.ts): keyed, so each is decided once. */
@Entity('baton_topology_node')
export class TopologyNodeEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  run_id!: string;

  @PrimaryColumn({ type: 'varchar', length: 64 })
  node_key!: string;

  @PrimaryColumn({ type: 'int' })
  item!: number;

  @Column({ type: 'varchar', length: 16 })
  state!: string;

  @Column({ type: 'varchar', length: 32, nullable: true })
  task_id!: string | null;

  @Column({ type: 'text', nullable: true, transformer: jsonText })
  result!: Record<string, unknown> | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  created_at!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  updated_at!: number;
}

/**
 * What a repair of a run changed: the repair (`retry`, `rerun`, `skip`: who and when) and, as
 * `superseded`, each node row it reset or removed as it was before. Never edited.
 */
@Entity('baton_topology_history')
@Index('ix_topology_history_run', ['run_id', 'entry_id'])
export class TopologyHistoryEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  entry_id!: string;

  @Column({ type: 'varchar', length: 32 })
  run_id!: string;

  @Column({ type: 'bigint', transformer: bigintNumber })
  at!: number;

  @Column({ type: 'varchar', length: 16 })
  action!: string;

  @Column({ type: 'varchar', length: 64, nullable: true })
  node_key!: string | null;

  @Column({ type: 'int', nullable: true })
  item!: number | null;

  @Column({ type: 'varchar', length: 200, nullable: true })
  actor!: string | null;

  @Column({ type: 'text', nullable: true, transformer: jsonText })
  detail!: Record<string, unknown> | null;
}
