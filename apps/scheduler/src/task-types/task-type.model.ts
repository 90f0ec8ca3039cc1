import { BlockingKind, ContractCall } from '@baton/task-contract';
import { TimeoutPolicy, WorkerLostPolicy } from './task-type.entity';
import { WorkerRules } from './worker-rules';

/** A task type as services see it. */
export interface TaskTypeModel {
  taskType: string;
  blocking: BlockingKind;
  /** Optional contract calls its workers implement. */
  implements: ContractCall[];
  maxRetry: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  queueTimeoutMs: number | null;
  heartbeatTimeoutMs: number;
  deadlineSecond: number | null;
  timeoutPolicy: { queue: TimeoutPolicy; heartbeat: TimeoutPolicy; deadline: TimeoutPolicy };
  concurrencyLimit: number | null;
  rollbackOnFail: boolean;
  /** An attempt whose worker stays unreachable past the heartbeat timeout: failed, or recovered. */
  onWorkerLost: WorkerLostPolicy;
  /** Most starts per second over all scheduler instances; null: none. */
  rateLimitPerSec: number | null;
  /** Days a FINISH task of this type is kept before it is purged; null: the instance's default, 0: kept. */
  retentionDays: number | null;
  /** Which worker versions take new tasks of this type; null: any. */
  workerRules: WorkerRules | null;
  /**
   * The JSON Schema (draft 2020-12) of a task's params, as the type's workers last declared it:
   * params are checked against it wherever a task is made; null: none declared, any object goes.
   */
  paramsSchema: Record<string, unknown> | null;
  /** The schema of a task's result, as declared: documentation for callers, not checked. */
  resultSchema: Record<string, unknown> | null;
  createdAt: number;
  updatedAt: number;
}

/** What a type gets when a worker first declares it. */
export const TASK_TYPE_DEFAULTS = {
  maxRetry: 0,
  backoffBaseMs: 1000,
  backoffMaxMs: 60_000,
  queueTimeoutMs: null,
  heartbeatTimeoutMs: 30_000,
  deadlineSecond: null,
  timeoutPolicy: { queue: 'fail', heartbeat: 'retry', deadline: 'fail' },
  concurrencyLimit: null,
  rollbackOnFail: false,
  onWorkerLost: 'fail',
  rateLimitPerSec: null,
  retentionDays: null,
  workerRules: null,
  paramsSchema: null,
  resultSchema: null,
} as const satisfies Partial<TaskTypeModel>;
