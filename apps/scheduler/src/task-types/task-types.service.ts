import { Injectable } from '@nestjs/common';
import {
  BlockingKind,
  ContractCall,
  ContractErrorCode,
  ContractException,
} from '@baton/task-contract';
import { Clock } from '../common';
import { TaskTypeDefaultsDto, UpdateTaskTypeDto, toWorkerRules } from './dto/task-type.dto';
import { TASK_TYPE_DEFAULTS, TaskTypeModel } from './task-type.model';
import { TaskTypesRepository } from './task-types.repository';
import { rulesProblem } from './worker-rules';
import { JsonSchemas, SchemaProblem, describeProblems } from './params-schema';

/** The schemas a worker declares for a type. */
export interface DeclaredSchemas {
  params: Record<string, unknown> | null;
  result: Record<string, unknown> | null;
}

/** How long a cached type is trusted before it is read again (another instance may change it). */
const CACHE_MS = 2000;

/** Task types: declared by the workers that serve them, governed by a policy people set. */
/** The type of a topology run's centre task: Baton's own, declared by no worker. */
export const CENTRE_TASK_TYPE = 'topology';

@Injectable()
export class TaskTypesService {
  private readonly cache = new Map<string, { model: TaskTypeModel; at: number }>();
  private readonly schemas = new JsonSchemas();

  constructor(
    private readonly repo: TaskTypesRepository,
    private readonly clock: Clock,
  ) {}

  list(): Promise<TaskTypeModel[]> {
    return this.repo.findAll();
  }

  /** The type, or undefined when no worker ever declared it. Cached briefly: read on every task. */
  async find(taskType: string): Promise<TaskTypeModel | undefined> {
    const now = this.clock.now();
    const hit = this.cache.get(taskType);
    if (hit && now - hit.at < CACHE_MS) return hit.model;
    const model = await this.repo.find(taskType);
    if (model) this.cache.set(taskType, { model, at: now });
    return model;
  }

  async get(taskType: string): Promise<TaskTypeModel> {
    const model = await this.find(taskType);
    if (!model)
      throw new ContractException(
        ContractErrorCode.NOT_FOUND,
        `task type ${taskType} is not registered`,
        { task_type: taskType },
      );
    return model;
  }

  /** Refuses a declaration whose schema cannot be one (400 naming the type and which schema). */
  checkSchemas(taskType: string, schemas: DeclaredSchemas): void {
    for (const [which, schema] of Object.entries(schemas)) {
      const problem = schema === null ? undefined : this.schemas.problemOf(schema);
      if (problem)
        throw new ContractException(
          ContractErrorCode.VALIDATION_FAILED,
          `${taskType}: ${which}_schema ${problem}`,
          { task_type: taskType },
        );
    }
  }

  /** A worker declares a type it serves: created with defaults the first time, its declaration kept current. */
  async declare(
    taskType: string,
    blocking: BlockingKind,
    implemented: ContractCall[],
    defaults: TaskTypeDefaultsDto = {},
    schemas: DeclaredSchemas = { params: null, result: null },
  ): Promise<void> {
    if (taskType === CENTRE_TASK_TYPE)
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `${CENTRE_TASK_TYPE} is the type of topology runs' centre tasks: no worker may declare it`,
        { task_type: taskType },
      );
    this.checkSchemas(taskType, schemas);
    const declared = { paramsSchema: schemas.params, resultSchema: schemas.result };
    const now = this.clock.now();
    const existing = await this.repo.find(taskType);
    const policy = {
      maxRetry: defaults.max_retry ?? TASK_TYPE_DEFAULTS.maxRetry,
      backoffBaseMs: defaults.backoff_base_ms ?? TASK_TYPE_DEFAULTS.backoffBaseMs,
      backoffMaxMs: defaults.backoff_max_ms ?? TASK_TYPE_DEFAULTS.backoffMaxMs,
    };
    if (!existing && policy.backoffMaxMs < policy.backoffBaseMs) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `${taskType}: defaults.backoff_max_ms must be at least defaults.backoff_base_ms`,
      );
    }
    const model: TaskTypeModel = existing
      ? { ...existing, blocking, implements: implemented, ...declared, updatedAt: now }
      : {
          taskType,
          blocking,
          implements: implemented,
          ...TASK_TYPE_DEFAULTS,
          ...policy,
          ...declared,
          timeoutPolicy: { ...TASK_TYPE_DEFAULTS.timeoutPolicy },
          createdAt: now,
          updatedAt: now,
        };
    await this.repo.save(model);
    this.cache.set(taskType, { model, at: now });
  }

  /**
   * Refuses `params` that break the type's declared schema (400, every problem with its JSON
   * pointer under `at`, e.g. `/params`); `holes` are pointers a placeholder fills later.
   */
  checkParams(
    type: TaskTypeModel,
    params: unknown,
    at = '/params',
    holes: readonly string[] = [],
  ): void {
    if (!type.paramsSchema) return;
    const problems: SchemaProblem[] = this.schemas.check(type.paramsSchema, params, at, holes);
    if (problems.length === 0) return;
    throw new ContractException(
      ContractErrorCode.VALIDATION_FAILED,
      `params do not match the schema of ${type.taskType}: ${describeProblems(problems)}`,
      { task_type: type.taskType, errors: problems },
    );
  }

  async update(taskType: string, dto: UpdateTaskTypeDto): Promise<TaskTypeModel> {
    const current = await this.repo.find(taskType);
    if (!current)
      throw new ContractException(
        ContractErrorCode.NOT_FOUND,
        `task type ${taskType} is not registered`,
        { task_type: taskType },
      );
    const next: TaskTypeModel = {
      ...current,
      maxRetry: dto.max_retry ?? current.maxRetry,
      backoffBaseMs: dto.backoff_base_ms ?? current.backoffBaseMs,
      backoffMaxMs: dto.backoff_max_ms ?? current.backoffMaxMs,
      queueTimeoutMs:
        dto.queue_timeout_ms !== undefined ? dto.queue_timeout_ms : current.queueTimeoutMs,
      heartbeatTimeoutMs: dto.heartbeat_timeout_ms ?? current.heartbeatTimeoutMs,
      deadlineSecond:
        dto.deadline_second !== undefined ? dto.deadline_second : current.deadlineSecond,
      timeoutPolicy: dto.timeout_policy ?? current.timeoutPolicy,
      concurrencyLimit:
        dto.concurrency_limit !== undefined ? dto.concurrency_limit : current.concurrencyLimit,
      rollbackOnFail: dto.rollback_on_fail ?? current.rollbackOnFail,
      onWorkerLost: dto.on_worker_lost ?? current.onWorkerLost,
      rateLimitPerSec:
        dto.rate_limit_per_sec !== undefined ? dto.rate_limit_per_sec : current.rateLimitPerSec,
      retentionDays: dto.retention_days !== undefined ? dto.retention_days : current.retentionDays,
      workerRules:
        dto.worker_rules === undefined
          ? current.workerRules
          : dto.worker_rules && toWorkerRules(dto.worker_rules),
      updatedAt: this.clock.now(),
    };
    if (next.backoffMaxMs < next.backoffBaseMs) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        'backoff_max_ms must be at least backoff_base_ms',
      );
    }
    const problem = next.workerRules && rulesProblem(next.workerRules);
    if (problem)
      throw new ContractException(ContractErrorCode.VALIDATION_FAILED, `worker_rules.${problem}`);
    await this.repo.save(next);
    this.cache.set(taskType, { model: next, at: next.updatedAt });
    return next;
  }
}
