import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { BlockingKind, ContractCall } from '@baton/task-contract';
import { TIMEOUT_POLICIES, TimeoutPolicy } from '../task-type.entity';
import { TaskTypeModel } from '../task-type.model';
import { WorkerRules } from '../worker-rules';

/** What `on_worker_lost` means, as the API documents say it. */
const ON_WORKER_LOST =
  'what an attempt comes to when its worker stays unreachable past the heartbeat timeout (it never comes back): `fail` (the default: the heartbeat timeout policy; the work may still be running somewhere the scheduler cannot see, and running it again could do it twice) or `recover` (another attempt on another eligible worker, not counted against max_retry: for work that is safe to run again; never for a task with lock_keys, whose lost run may still hold them)';

export class TimeoutPolicyDto {
  @ApiProperty({
    enum: TIMEOUT_POLICIES,
    description: 'waiting in the queue longer than queue_timeout_ms',
  })
  @IsIn(TIMEOUT_POLICIES)
  queue!: TimeoutPolicy;

  @ApiProperty({ enum: TIMEOUT_POLICIES, description: 'no heartbeat for heartbeat_timeout_ms' })
  @IsIn(TIMEOUT_POLICIES)
  heartbeat!: TimeoutPolicy;

  @ApiProperty({ enum: TIMEOUT_POLICIES, description: 'running longer than the deadline' })
  @IsIn(TIMEOUT_POLICIES)
  deadline!: TimeoutPolicy;
}

const VERSION = { example: '1.4.0', maxLength: 50 } as const;

export class WorkerRampDto {
  @ApiProperty({ ...VERSION, example: '1.5.0', description: 'the version being released' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(50)
  version!: string;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    maximum: 100,
    description:
      'the share of new tasks (by a hash of the task id) that go to workers of this version while workers of other versions serve too',
  })
  @IsInt()
  @Min(0)
  @Max(100)
  percent!: number;
}

/**
 * Which worker versions take new tasks of a type. Versions compare on their dots, numbers as
 * numbers (1.10 after 1.9, 1.2 equal to 1.2.0, 1.2.0-rc1 before 1.2.0), other parts as text.
 */
export class WorkerRulesDto {
  @ApiPropertyOptional({
    ...VERSION,
    nullable: true,
    type: String,
    description: 'workers of a lower version get no new task of the type',
  })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(50)
  min_version?: string | null;

  @ApiPropertyOptional({
    type: [String],
    maxItems: 100,
    example: ['1.4.1'],
    description: 'workers of these versions get no new task of the type',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @IsNotEmpty({ each: true })
  @MaxLength(50, { each: true })
  blocked_versions?: string[];

  @ApiPropertyOptional({ type: WorkerRampDto, nullable: true })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => WorkerRampDto)
  ramp?: WorkerRampDto | null;
}

export const toWorkerRules = (dto: WorkerRulesDto): WorkerRules => ({
  minVersion: dto.min_version ?? null,
  blockedVersions: dto.blocked_versions ?? [],
  ramp: dto.ramp ? { version: dto.ramp.version, percent: dto.ramp.percent } : null,
});

const toWorkerRulesDto = (r: WorkerRules): WorkerRulesDto => ({
  min_version: r.minVersion,
  blocked_versions: r.blockedVersions,
  ramp: r.ramp,
});

/** A task type: what its workers declared, and the policy people set. */
export class TaskTypeDto {
  @ApiProperty() task_type!: string;
  @ApiProperty({ enum: BlockingKind }) blocking!: BlockingKind;
  @ApiProperty({
    enum: ContractCall,
    isArray: true,
    description: 'optional calls its workers implement',
  })
  implements!: ContractCall[];
  @ApiProperty({ type: 'integer' }) max_retry!: number;
  @ApiProperty({ type: 'integer' }) backoff_base_ms!: number;
  @ApiProperty({ type: 'integer' }) backoff_max_ms!: number;
  @ApiPropertyOptional({ type: 'integer', nullable: true }) queue_timeout_ms!: number | null;
  @ApiProperty({ type: 'integer' }) heartbeat_timeout_ms!: number;
  @ApiPropertyOptional({ type: 'integer', nullable: true }) deadline_second!: number | null;
  @ApiProperty({ type: TimeoutPolicyDto }) timeout_policy!: TimeoutPolicyDto;
  @ApiPropertyOptional({ type: 'integer', nullable: true }) concurrency_limit!: number | null;
  @ApiProperty() rollback_on_fail!: boolean;
  @ApiProperty({ enum: ['fail', 'recover'], description: ON_WORKER_LOST })
  on_worker_lost!: 'fail' | 'recover';
  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    description: 'most starts per second over all scheduler instances',
  })
  rate_limit_per_sec!: number | null;
  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    description:
      "days a FINISH task of this type is kept before it is purged; null: the instance's default (BATON_RETENTION_DAYS), 0: kept forever",
  })
  retention_days!: number | null;
  @ApiPropertyOptional({
    type: WorkerRulesDto,
    nullable: true,
    description: 'which worker versions take new tasks of the type; null: any',
  })
  worker_rules!: WorkerRulesDto | null;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description:
      "the JSON Schema (draft 2020-12) of a task's params, as the type's workers last declared it: a task whose params break it is refused (400, each problem's JSON pointer in `data.errors`); null: none declared, any object goes",
  })
  params_schema!: Record<string, unknown> | null;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description:
      "the JSON Schema of a task's result, as declared: for callers to read, not checked; null: none declared",
  })
  result_schema!: Record<string, unknown> | null;
}

export function toTaskTypeDto(m: TaskTypeModel): TaskTypeDto {
  return {
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
    worker_rules: m.workerRules ? toWorkerRulesDto(m.workerRules) : null,
    params_schema: m.paramsSchema,
    result_schema: m.resultSchema,
  };
}

/** Body of `PATCH /v1/task-types/{task_type}`: the policy; what workers declare is not set here. */
export class UpdateTaskTypeDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 100 })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100)
  max_retry?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 10, maximum: 3_600_000 })
  @IsOptional()
  @IsInt()
  @Min(10)
  @Max(3_600_000)
  backoff_base_ms?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 10, maximum: 86_400_000 })
  @IsOptional()
  @IsInt()
  @Min(10)
  @Max(86_400_000)
  backoff_max_ms?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 100, nullable: true })
  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(86_400_000)
  queue_timeout_ms?: number | null;

  @ApiPropertyOptional({ type: 'integer', minimum: 100, maximum: 3_600_000 })
  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  heartbeat_timeout_ms?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, nullable: true })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(604_800)
  deadline_second?: number | null;

  @ApiPropertyOptional({ type: TimeoutPolicyDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => TimeoutPolicyDto)
  timeout_policy?: TimeoutPolicyDto;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, nullable: true })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  concurrency_limit?: number | null;

  @ApiPropertyOptional()
  @IsOptional()
  @IsBoolean()
  rollback_on_fail?: boolean;

  @ApiPropertyOptional({ enum: ['fail', 'recover'], description: ON_WORKER_LOST })
  @IsOptional()
  @IsIn(['fail', 'recover'])
  on_worker_lost?: 'fail' | 'recover';

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 100000,
    nullable: true,
    description: 'most starts per second over all scheduler instances; null: no limit',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100_000)
  rate_limit_per_sec?: number | null;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 36500,
    nullable: true,
    description:
      "days a FINISH task of this type (with its events, attempts, labels and idempotency record) is kept before it is purged; null: the instance's default (BATON_RETENTION_DAYS), 0: kept forever",
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(36_500)
  retention_days?: number | null;

  @ApiPropertyOptional({
    type: WorkerRulesDto,
    nullable: true,
    description:
      'which worker versions take new tasks of the type (replaced whole; null: any). Tasks already on a worker finish there',
  })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => WorkerRulesDto)
  worker_rules?: WorkerRulesDto | null;
}

/**
 * The retry policy a worker may declare with a task type: the scheduler starts a type it does not
 * know yet with it; an existing type keeps what it has (operators own it after that).
 */
export class TaskTypeDefaultsDto extends PickType(UpdateTaskTypeDto, [
  'max_retry',
  'backoff_base_ms',
  'backoff_max_ms',
] as const) {}
