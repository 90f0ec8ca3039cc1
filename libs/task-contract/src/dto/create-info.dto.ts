import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
} from 'class-validator';

/** Task types are lower-case dotted names, e.g. `mysql.failover`, `demo.echo`. */
export const TASK_TYPE_PATTERN = /^[a-z0-9][a-z0-9._-]{0,99}$/;

/** What the task is and where it runs (docs/architecture.md, `create_info`). */
export class CreateInfoDto {
  @ApiProperty({ example: 'demo.echo', pattern: TASK_TYPE_PATTERN.source })
  @IsString()
  @Matches(TASK_TYPE_PATTERN, { message: 'task_type must be a lower-case dotted name' })
  task_type!: string;

  @ApiProperty({ example: 'nightly backup of cluster 42', minLength: 1, maxLength: 200 })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  task_name!: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 9,
    default: 5,
    description: 'priority, 9 highest',
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(9)
  important_level?: number;

  @ApiPropertyOptional({
    example: 'http://127.0.0.1:3100',
    description: 'base URL of the worker; the scheduler only accepts URLs of registered workers',
  })
  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  @MaxLength(500)
  http_url?: string;

  @ApiPropertyOptional({ description: 'task this one was spawned by (topologies)' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  parent_task_id?: string;

  @ApiPropertyOptional({ description: 'the centre task of the topology this task belongs to' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  control_task_id?: string;
}
