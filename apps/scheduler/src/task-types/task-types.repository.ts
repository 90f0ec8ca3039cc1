import { Injectable } from '@nestjs/common';
import { BlockingKind, ContractCall } from '@baton/task-contract';
import { DataSource } from 'typeorm';
import { TaskTypeEntity } from './task-type.entity';
import { TaskTypeModel } from './task-type.model';

const toModel = (e: TaskTypeEntity): TaskTypeModel => ({
  taskType: e.task_type,
  blocking: e.blocking as BlockingKind,
  implements: e.implements as ContractCall[],
  maxRetry: e.max_retry,
  backoffBaseMs: e.backoff_base_ms,
  backoffMaxMs: e.backoff_max_ms,
  queueTimeoutMs: e.queue_timeout_ms,
  heartbeatTimeoutMs: e.heartbeat_timeout_ms,
  deadlineSecond: e.deadline_second,
  timeoutPolicy: e.timeout_policy,
  concurrencyLimit: e.concurrency_limit,
  rollbackOnFail: Boolean(e.rollback_on_fail),
  onWorkerLost: e.on_worker_lost === 'recover' ? 'recover' : 'fail',
  rateLimitPerSec: e.rate_limit_per_sec ?? null,
  retentionDays: e.retention_days ?? null,
  workerRules: e.worker_rules ?? null,
  paramsSchema: e.params_schema ?? null,
  resultSchema: e.result_schema ?? null,
  createdAt: e.created_at,
  updatedAt: e.updated_at,
});

@Injectable()
export class TaskTypesRepository {
  constructor(private readonly db: DataSource) {}

  async findAll(): Promise<TaskTypeModel[]> {
    return (await this.db.manager.find(TaskTypeEntity, { order: { task_type: 'ASC' } })).map(
      toModel,
    );
  }

  async find(taskType: string): Promise<TaskTypeModel | undefined> {
    const e = await this.db.manager.findOneBy(TaskTypeEntity, { task_type: taskType });
    return e ? toModel(e) : undefined;
  }

  async save(m: TaskTypeModel): Promise<void> {
    await this.db.manager.save(TaskTypeEntity, {
      task_type: m.taskType,
      blocking: m.blocking,
      implements: m.implements,
      max_retry: m.maxRetry,
      backoff_base_ms: m.backoffBaseMs,
      backoff_max_ms: m.backoffMaxMs,
      queue_timeout_ms: m.queueTimeoutMs,
      heartbeat_timeout_ms: m.heartbeatTimeoutMs,
      deadline_second: m.deadlineSecond,
      timeout_policy: m.timeoutPolicy,
      concurrency_limit: m.concurrencyLimit,
      rollback_on_fail: m.rollbackOnFail,
      on_worker_lost: m.onWorkerLost,
      rate_limit_per_sec: m.rateLimitPerSec,
      retention_days: m.retentionDays,
      worker_rules: m.workerRules,
      params_schema: m.paramsSchema,
      result_schema: m.resultSchema,
      created_at: m.createdAt,
      updated_at: m.updatedAt,
    });
  }
}
