import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { BlockingKind, ContractCall } from '@baton/task-contract';
import { TIMEOUT_POLICIES, TimeoutPolicy } from '../task-type.entity';
import { TaskTypeModel } from '../task-type.model';

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
    rate_limit_per_sec: m.rateLimitPerSec,
    retention_days: m.retentionDays,
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
