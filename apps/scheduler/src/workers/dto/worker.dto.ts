import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsObject,
  IsEnum,
  IsIn,
  IsInt,
  IsISO8601,
  IsNotEmpty,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import {
  BlockingKind,
  ContractCall,
  OPTIONAL_CALLS,
  TASK_TYPE_PATTERN,
} from '@baton/task-contract';
import { TaskTypeDefaultsDto } from '../../task-types';
import { WorkerModel } from '../worker.model';
import { WorkerHealth, activeManualBlacklist } from '../worker-eligibility';

const OPTIONAL = [...OPTIONAL_CALLS];

export class DeclaredTaskTypeDto {
  @ApiProperty({ example: 'demo.echo' })
  @Matches(TASK_TYPE_PATTERN)
  task_type!: string;

  @ApiProperty({ enum: BlockingKind })
  @IsEnum(BlockingKind)
  blocking!: BlockingKind;

  @ApiProperty({
    enum: OPTIONAL,
    isArray: true,
    description: 'optional calls this worker implements; the scheduler never makes the others',
  })
  @IsArray()
  @IsIn(OPTIONAL, { each: true })
  implements!: ContractCall[];

  @ApiPropertyOptional({
    type: TaskTypeDefaultsDto,
    description:
      'the retry policy to start the type with if the scheduler does not know it yet; a known type keeps its own',
  })
  @IsOptional()
  @ValidateNested()
  @Type(() => TaskTypeDefaultsDto)
  defaults?: TaskTypeDefaultsDto;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: {
      type: 'object',
      properties: { seconds: { type: 'number', minimum: 0, maximum: 3600 } },
      required: ['seconds'],
    },
    description:
      "a JSON Schema (draft 2020-12, at most 60 KiB, references only inside itself) of the type's params: the scheduler refuses a task whose params break it (400 naming each problem's JSON pointer), wherever a task is made; the last registration's declaration is the type's (one without it removes it)",
  })
  @IsOptional()
  @IsObject()
  params_schema?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description:
      "a JSON Schema of the type's result, shown with the type (`GET /v1/task-types/{task_type}`) for callers; the scheduler does not check results against it",
  })
  @IsOptional()
  @IsObject()
  result_schema?: Record<string, unknown>;
}

/** Body of `POST /v1/workers`: a worker instance announces itself (again, after a restart). */
export class RegisterWorkerDto {
  @ApiProperty({ example: 'backup-worker-1', pattern: '^[A-Za-z0-9._:-]{1,100}$' })
  @Matches(/^[A-Za-z0-9._:-]{1,100}$/)
  worker_id!: string;

  @ApiProperty({ example: 'http://10.0.0.7:3100', description: 'base URL the scheduler calls' })
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  @MaxLength(500)
  url!: string;

  @ApiProperty({ example: '1.4.2', description: 'the worker’s own version (its build)' })
  @IsString()
  @MaxLength(50)
  version!: string;

  @ApiPropertyOptional({
    example: '1.2.0',
    pattern: '^\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}$',
    description:
      'the worker contract it speaks (the worker document’s info.version). Absent: taken as 1.0.0, which did not send it. Below the scheduler’s BATON_MIN_WORKER_CONTRACT (1.1.0 unless set) the registration is refused with 409 (40905)',
  })
  @IsOptional()
  @Matches(/^\d{1,3}\.\d{1,3}\.\d{1,3}$/, {
    message: 'contract_version must be a version like 1.2.0',
  })
  contract_version?: string;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    maximum: 100000,
    description: 'most tasks it runs at once',
  })
  @IsInt()
  @Min(1)
  @Max(100_000)
  capacity!: number;

  @ApiProperty({ type: [DeclaredTaskTypeDto] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(500)
  @IsObject({ each: true, message: 'each of task_types must be an object' })
  @ValidateNested({ each: true })
  @Type(() => DeclaredTaskTypeDto)
  task_types!: DeclaredTaskTypeDto[];
}

/** Body of `POST /v1/workers/{worker_id}/blacklist`. */
export class BlacklistWorkerDto {
  @ApiProperty({ example: 'disk errors on /dev/sdb', maxLength: 500 })
  @IsString()
  @IsNotEmpty()
  @MaxLength(500)
  reason!: string;

  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'when the blacklist ends by itself (in the future); absent or null: when lifted',
  })
  @IsOptional()
  @IsISO8601({ strict: true })
  until?: string | null;
}

/** A blacklist a person set on a worker. */
export class WorkerBlacklistDto {
  @ApiProperty() reason!: string;
  @ApiProperty({ format: 'date-time' }) since!: string;
  @ApiPropertyOptional({
    nullable: true,
    type: String,
    format: 'date-time',
    description: 'null: until lifted',
  })
  until!: string | null;
}

export class WorkerDto {
  @ApiProperty() worker_id!: string;
  @ApiProperty() url!: string;
  @ApiProperty({ type: [String] }) task_types!: string[];
  @ApiProperty() version!: string;
  @ApiProperty({
    example: '1.2.0',
    description:
      'the worker contract it registered with (1.0.0 when its registration named none, as workers of 1.0.0 did)',
  })
  contract_version!: string;
  @ApiProperty({ type: 'integer' }) capacity!: number;
  @ApiProperty({ type: 'integer', description: 'tasks this scheduler instance is driving on it' })
  inflight!: number;
  @ApiProperty({ format: 'date-time' }) last_heartbeat_at!: string;
  @ApiProperty({
    enum: ['healthy', 'stale', 'blacklisted'],
    description: 'blacklisted: after repeated call failures, or by hand (`blacklist`)',
  })
  health!: WorkerHealth;
  @ApiProperty({ type: 'integer' }) consecutive_failures!: number;
  @ApiPropertyOptional({
    nullable: true,
    type: String,
    format: 'date-time',
    description: 'the end of a blacklist after repeated call failures',
  })
  blacklisted_until!: string | null;
  @ApiProperty({ description: 'drained by a person: no new tasks, the ones it has finish' })
  draining!: boolean;
  @ApiPropertyOptional({ nullable: true, type: String, format: 'date-time' })
  draining_since!: string | null;
  @ApiPropertyOptional({
    nullable: true,
    type: WorkerBlacklistDto,
    description: 'a blacklist by hand while it holds',
  })
  blacklist!: WorkerBlacklistDto | null;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string', nullable: true },
    example: { 'demo.echo': null, 'db.backup': 'version 1.3.0 is below min_version 1.4.0' },
    description:
      "per task type it serves: why new tasks of the type do not go to it (its health, a drain, a blacklist, the type's version rules), or null when they may",
  })
  excluded!: Record<string, string | null>;
}

/** The timing the scheduler applies to one task type, told to the worker that registers it. */
export class TypeTimingDto {
  @ApiProperty() task_type!: string;
  @ApiProperty({
    type: 'integer',
    description:
      'how often the scheduler expects a sign of life of a RUNNING attempt (a heartbeat or progress callback, or alive: true when it polls): a third of the timeout',
  })
  heartbeat_interval_ms!: number;
  @ApiProperty({
    type: 'integer',
    description:
      "a RUNNING attempt without a sign of life for this long is timed out under the type's heartbeat policy (PATCH /v1/task-types/{task_type} changes it)",
  })
  heartbeat_timeout_ms!: number;
}

/** The contract's timing, as this scheduler applies it (the worker contract's "Timing"). */
export class ContractTimingDto {
  @ApiProperty({
    type: 'integer',
    description:
      'how often the worker should send its registration heartbeat (PUT /v1/workers/{worker_id}/heartbeat): a third of stale_after_ms',
  })
  heartbeat_interval_ms!: number;
  @ApiProperty({
    type: 'integer',
    description: 'a worker not heard from for this long gets no new attempts (health stale)',
  })
  stale_after_ms!: number;
  @ApiProperty({
    type: 'integer',
    description:
      'how often a RUNNING async attempt is polled (query, then heartbeat), callbacks or not',
  })
  poll_interval_ms!: number;
  @ApiProperty({ type: [TypeTimingDto] }) task_types!: TypeTimingDto[];
}

/** The answer to a registration: the worker as listed, and the timing it is held to. */
export class RegisteredWorkerDto extends WorkerDto {
  @ApiProperty({ type: ContractTimingDto }) timing!: ContractTimingDto;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function toWorkerDto(
  m: WorkerModel,
  inflight: number,
  health: WorkerHealth,
  excluded: Record<string, string | null>,
  now: number,
): WorkerDto {
  const blacklist = activeManualBlacklist(m, now);
  return {
    worker_id: m.workerId,
    url: m.url,
    task_types: m.taskTypes,
    version: m.version,
    contract_version: m.contractVersion,
    capacity: m.capacity,
    inflight,
    last_heartbeat_at: new Date(m.lastHeartbeatAt).toISOString(),
    health,
    consecutive_failures: m.consecutiveFailures,
    blacklisted_until: iso(m.blacklistedUntil),
    draining: m.drainingSince !== null,
    draining_since: iso(m.drainingSince),
    blacklist: blacklist && {
      reason: blacklist.reason,
      since: new Date(blacklist.since).toISOString(),
      until: iso(blacklist.until),
    },
    excluded,
  };
}
