import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber, jsonText } from '../database';
import { WorkerRules } from './worker-rules';

/** What to do when a timeout fires: try again, give up, or only tell people. */
export const TIMEOUT_POLICIES = ['retry', 'fail', 'alert'] as const;
export type TimeoutPolicy = (typeof TIMEOUT_POLICIES)[number];

/** A registered task type: how it blocks, what it implements, its timeouts and retry policy. */
@Entity('baton_task_type')
export class TaskTypeEntity {
  @PrimaryColumn({ type: 'varchar', length: 100 })
  task_type!: string;

  @Column({ type: 'varchar', length: 8 })
  blocking!: string;

  /** Optional contract calls the workers of this type implement (prepare, pause, rollback, ...). */
  @Column({ type: 'text', transformer: jsonText })
  implements!: string[];

  @Column({ type: 'int' })
  max_retry!: number;

  @Column({ type: 'int' })
  backoff_base_ms!: number;

  @Column({ type: 'int' })
  backoff_max_ms!: number;

  /** Longest wait in the queue before the queue timeout fires; null: none. */
  @Column({ type: 'int', nullable: true })
  queue_timeout_ms!: number | null;

  /** A RUNNING task whose heartbeat is older than this is lost. */
  @Column({ type: 'int' })
  heartbeat_timeout_ms!: number;

  /** Default total run time when a task gives no deadline_second; null: none. */
  @Column({ type: 'int', nullable: true })
  deadline_second!: number | null;

  @Column({ type: 'text', transformer: jsonText })
  timeout_policy!: { queue: TimeoutPolicy; heartbeat: TimeoutPolicy; deadline: TimeoutPolicy };

  /** Most tasks of this type on a worker at once (CREATE, PREPARE, RUNNING), over the fleet; null: no limit. */
  @Column({ type: 'int', nullable: true })
  concurrency_limit!: number | null;

  @Column({ type: 'boolean' })
  rollback_on_fail!: boolean;

  /** What an attempt on a worker that stays unreachable past the heartbeat timeout comes to. */
  @Column({ type: 'varchar', length: 8, default: 'fail' })
  on_worker_lost!: WorkerLostPolicy;

  /** Most starts per second over all scheduler instances; null: no limit. */
  @Column({ type: 'int', nullable: true })
  rate_limit_per_sec!: number | null;

  /** Days a FINISH task is kept; null: the instance's default (BATON_RETENTION_DAYS), 0: forever. */
  @Column({ type: 'int', nullable: true })
  retention_days!: number | null;

  /** Which worker versions take new tasks of the type (WorkerRules, JSON); null: any. */
  @Column({ type: 'text', nullable: true, transformer: jsonText })
  worker_rules!: WorkerRules | null;

  /** The JSON Schema its workers declare for a task's params (JSON); null: none declared. */
  @Column({ type: 'text', nullable: true, transformer: jsonText })
  params_schema!: Record<string, unknown> | null;

  /** The JSON Schema its workers declare for a task's result (JSON), shown, not enforced. */
  @Column({ type: 'text', nullable: true, transformer: jsonText })
  result_schema!: Record<string, unknown> | null;

  @Column({ type: 'bigint', transformer: bigintNumber })
  created_at!: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  updated_at!: number;
}

/**
 * What a lost worker means for its attempt: `fail` (the heartbeat timeout's policy), or `recover`
 * (another attempt on another worker, not counted against max_retry: for work safe to repeat).
 */
export type WorkerLostPolicy = 'fail' | 'recover';
