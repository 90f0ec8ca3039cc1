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

  @ApiProperty({ example: '1.4.2' })
  @IsString()
  @MaxLength(50)
  version!: string;

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

export class WorkerDto {
  @ApiProperty() worker_id!: string;
  @ApiProperty() url!: string;
  @ApiProperty({ type: [String] }) task_types!: string[];
  @ApiProperty() version!: string;
  @ApiProperty({ type: 'integer' }) capacity!: number;
  @ApiProperty({ type: 'integer', description: 'tasks this scheduler instance is driving on it' })
  inflight!: number;
  @ApiProperty({ format: 'date-time' }) last_heartbeat_at!: string;
  @ApiProperty({ enum: ['healthy', 'stale', 'blacklisted'] }) health!:
    'healthy' | 'stale' | 'blacklisted';
  @ApiProperty({ type: 'integer' }) consecutive_failures!: number;
  @ApiPropertyOptional({ nullable: true, type: String, format: 'date-time' }) blacklisted_until!:
    string | null;
}

export function toWorkerDto(
  m: WorkerModel,
  inflight: number,
  health: WorkerDto['health'],
): WorkerDto {
  return {
    worker_id: m.workerId,
    url: m.url,
    task_types: m.taskTypes,
    version: m.version,
    capacity: m.capacity,
    inflight,
    last_heartbeat_at: new Date(m.lastHeartbeatAt).toISOString(),
    health,
    consecutive_failures: m.consecutiveFailures,
    blacklisted_until:
      m.blacklistedUntil === null ? null : new Date(m.blacklistedUntil).toISOString(),
  };
}
