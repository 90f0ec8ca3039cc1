import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { GET_ACTIONS, PUT_ACTIONS } from '../enums/task-action.enum';
import { TASK_TYPE_PATTERN } from '../dto/create-info.dto';
import { TASK_ID_PATTERN } from '../dto/worker-requests.dto';

/** Query string of `GET /v1/task/{task_type}`. */
export class ReadQueryDto {
  @ApiPropertyOptional({ pattern: TASK_ID_PATTERN.source })
  @IsOptional()
  @Matches(TASK_ID_PATTERN)
  task_id?: string;

  @ApiPropertyOptional({ maxLength: 200 })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  task_name?: string;

  @ApiPropertyOptional({ description: 'accepted for symmetry with the path; must match it' })
  @IsOptional()
  @Matches(TASK_TYPE_PATTERN)
  task_type?: string;

  @ApiPropertyOptional({ enum: GET_ACTIONS, description: 'absent: query' })
  @IsOptional()
  @IsIn(GET_ACTIONS)
  action?: (typeof GET_ACTIONS)[number];
}

/** Query string of `PUT /v1/task/{task_type}`. */
export class WriteQueryDto {
  @ApiPropertyOptional({ pattern: TASK_ID_PATTERN.source })
  @Matches(TASK_ID_PATTERN, {
    message: 'task_id is required and must be 1-64 characters of [A-Za-z0-9_-]',
  })
  task_id!: string;

  @ApiPropertyOptional({ description: 'accepted for symmetry with the path; must match it' })
  @IsOptional()
  @Matches(TASK_TYPE_PATTERN)
  task_type?: string;

  @ApiPropertyOptional({ enum: PUT_ACTIONS, description: 'absent: notify' })
  @IsOptional()
  @IsIn(PUT_ACTIONS)
  action?: (typeof PUT_ACTIONS)[number];
}

/** Query string of `POST /v1/task/{task_type}`: nothing, or `action=running` (create_run). */
export class CreateQueryDto {
  @ApiPropertyOptional({ enum: ['running'], description: 'absent: create; running: create_run' })
  @IsOptional()
  @IsIn(['running'], { message: 'create takes action=running or no action' })
  action?: 'running';
}
