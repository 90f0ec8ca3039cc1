import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { bigintNumber, jsonText } from '../database';
import type { TaskWait } from './task.model';

/**
 * One task (docs/architecture.md). Never leaves the repository: services see TaskModel. The name
 * search index (migration TaskListIndexes) is not an entity's: a FULLTEXT index over a generated
 * column on MariaDB/MySQL, an FTS5 table on SQLite.
 */
@Entity('baton_task')
@Index('ix_task_due', ['due_at'])
@Index('ix_task_status_due', ['status', 'due_at'])
@Index('ix_task_type_status_finished', ['task_type', 'status', 'finished_at'])
@Index('ix_task_tenant_created', ['tenant', 'created_at'])
@Index('ix_task_tenant_status', ['tenant', 'status'])
@Index('ix_task_parent', ['parent_task_id', 'task_id'])
@Index('ix_task_control', ['control_task_id', 'task_id'])
@Index('ix_task_worker', ['worker_id', 'task_id'])
@Index('ix_task_outcome', ['outcome', 'task_id'])
@Index('ix_task_attempt', ['attempt', 'task_id'])
@Index('ix_task_name', ['task_name', 'task_id'])
@Index('ix_task_updated', ['updated_at', 'task_id'])
@Index('ix_task_priority', ['priority', 'task_id'])
@Index('ix_task_created', ['created_at', 'task_id'])
@Index('ux_task_idempotency', ['tenant', 'idempotency_key'], { unique: true })
export class TaskEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  task_id!: string;

  @Column({ type: 'varchar', length: 100 })
  task_type!: string;

  @Column({ type: 'varchar', length: 200 })
  task_name!: string;

  @Column({ type: 'varchar', length: 100 })
  tenant!: string;

  @Column({ type: 'text', transformer: jsonText })
  labels!: Record<string, string>;

  @Column({ type: 'varchar', length: 16 })
  status!: string;

  /** Compare-and-set counter: every write of the row checks and bumps it. */
  @Column({ type: 'int' })
  version!: number;

  @Column({ type: 'int' })
  attempt!: number;

  /** Attempts opened because the one before never reached its worker: not counted as retries. */
  @Column({ type: 'int', default: 0 })
  moves!: number;

  @Column({ type: 'int' })
  priority!: number;

  @Column({ type: 'varchar', length: 8 })
  blocking!: string;

  @Column({ type: 'varchar', length: 16 })
  repetition!: string;

  @Column({ type: 'text', transformer: jsonText })
  params!: Record<string, unknown>;

  @Column({ type: 'text', transformer: jsonText })
  lock_keys!: string[];

  /** The worker base URL the client named (must be a registered worker of the type), if any. */
  @Column({ type: 'varchar', length: 500, nullable: true })
  requested_url!: string | null;

  /** The worker instance driving the current attempt. */
  @Column({ type: 'varchar', length: 100, nullable: true })
  worker_id!: string | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  worker_url!: string | null;

  @Column({ type: 'varchar', length: 32, nullable: true })
  parent_task_id!: string | null;

  @Column({ type: 'varchar', length: 32, nullable: true })
  control_task_id!: string | null;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  start_time!: number | null;

  @Column({ type: 'int', nullable: true })
  deadline_second!: number | null;

  @Column({ type: 'int', nullable: true })
  lock_timeout!: number | null;

  @Column({ type: 'int' })
  max_retry!: number;

  @Column({ type: 'varchar', length: 200, nullable: true })
  idempotency_key!: string | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  callback_url!: string | null;

  /** When the scheduler must look at the task next (dispatch, retry, poll, timeout); null: nothing due. */
  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  due_at!: number | null;

  /** The scheduler instance holding the task's transition claim, until lease_until. */
  @Column({ type: 'varchar', length: 100, nullable: true })
  owner!: string | null;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  lease_until!: number | null;

  /** Fencing token: bumped on every claim, sent to the worker as X-Baton-Fence. */
  @Column({ type: 'bigint', transformer: bigintNumber })
  fence!: number;

  @Column({ type: 'text', nullable: true, transformer: jsonText })
  result!: Record<string, unknown> | null;

  @Column({ type: 'text', nullable: true, transformer: jsonText })
  error!: { message: string; code?: string | null } | null;

  @Column({ type: 'text', nullable: true, transformer: jsonText })
  progress!: { percent: number; step: string | null; message: string | null } | null;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  heartbeat_at!: number | null;

  /** What keeps it from starting now, told once (JSON: TaskWait); null when nothing does. */
  @Column({ type: 'varchar', length: 1500, nullable: true, transformer: jsonText })
  waiting!: TaskWait | null;

  /** SUCCESS, FAIL or ROLLBACK: what the task came to before FINISH. */
  @Column({ type: 'varchar', length: 16, nullable: true })
  outcome!: string | null;

  @Column({ type: 'varchar', length: 16, nullable: true })
  paused_from!: string | null;

  /** Someone cancelled it: no retry follows its failure. */
  @Column({ type: 'boolean', default: false })
  cancel_requested!: boolean;

  /** An action a person asked for that the runner carries out (`rollback`). */
  @Column({ type: 'varchar', length: 16, nullable: true })
  pending_action!: string | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  created_at!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  updated_at!: number;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  started_at!: number | null;

  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber })
  finished_at!: number | null;
}
