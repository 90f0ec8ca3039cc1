import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, IsInt, IsOptional, Matches, Max, Min } from 'class-validator';
import { TASK_ID_PATTERN, TASK_TYPE_PATTERN } from '@baton/task-contract';
import { DecimalInt, TENANT_PATTERN } from '../../common';

const list = ({ value }: { value: unknown }): string[] =>
  String(value)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

/** Query string of `GET /v1/task-changes/stream`: every filter given must hold. */
export class TaskChangesQuery {
  @ApiPropertyOptional({
    pattern: TENANT_PATTERN.source,
    description: "only this tenant's tasks (a key of one tenant sees its own only)",
  })
  @IsOptional()
  @Matches(TENANT_PATTERN)
  tenant?: string;

  @ApiPropertyOptional({ description: 'comma-separated task types (at most 50)' })
  @IsOptional()
  @Transform(list)
  @ArrayMaxSize(50)
  @Matches(TASK_TYPE_PATTERN, { each: true })
  task_type?: string[];

  @ApiPropertyOptional({
    description: 'comma-separated task ids (at most 500): the rows a page shows',
  })
  @IsOptional()
  @Transform(list)
  @ArrayMaxSize(500)
  @Matches(TASK_ID_PATTERN, { each: true })
  task_id?: string[];

  @ApiPropertyOptional({
    pattern: TASK_ID_PATTERN.source,
    description: "the tasks of one topology run: its centre task's id",
  })
  @IsOptional()
  @Matches(TASK_ID_PATTERN)
  control_task_id?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 86400,
    description:
      'end the stream after this many seconds (the scheduler ends it after BATON_STREAM_MAX_SECONDS anyway, so connections move to new instances)',
  })
  @IsOptional()
  @DecimalInt()
  @IsInt()
  @Min(1)
  @Max(86400)
  max_seconds?: number;
}
