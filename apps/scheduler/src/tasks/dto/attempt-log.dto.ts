import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { LOG_LINE_LEVELS } from '@baton/task-contract';
import { DecimalInt } from '../../common';
import { AttemptLogLine, AttemptLogPage } from '../../task-store';

/** `after`: a seq, or -1 for the start. */
const SeqInt = (): PropertyDecorator =>
  Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^-?[0-9]{1,10}$/.test(value) ? Number(value) : value,
  );

/** Query string of `GET /v1/tasks/{task_id}/attempts/{attempt}/logs` (and its stream). */
export class AttemptLogQuery {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: -1,
    description:
      'lines after this seq (next_after of the page before); -1 or absent: from the start',
  })
  @IsOptional()
  @SeqInt()
  @IsInt()
  @Min(-1)
  @Max(2_000_000_000)
  after?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 1000, default: 200 })
  @IsOptional()
  @DecimalInt()
  @IsInt()
  @Min(1)
  @Max(1000)
  limit?: number;

  @ApiPropertyOptional({
    enum: LOG_LINE_LEVELS,
    description: 'lines at this level or above (warn: warn and error)',
  })
  @IsOptional()
  @IsIn(LOG_LINE_LEVELS as readonly string[])
  level?: (typeof LOG_LINE_LEVELS)[number];

  @ApiPropertyOptional({
    maxLength: 200,
    description: 'lines whose message contains this, any case',
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  q?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 86400,
    description:
      'the stream only: end it after this many seconds (at most BATON_STREAM_MAX_SECONDS)',
  })
  @IsOptional()
  @DecimalInt()
  @IsInt()
  @Min(1)
  @Max(86400)
  max_seconds?: number;
}

export class AttemptLogLineDto {
  @ApiProperty({ type: 'integer', description: 'the line’s number within the attempt' })
  seq!: number;
  @ApiProperty({ format: 'date-time' }) at!: string;
  @ApiProperty({ enum: LOG_LINE_LEVELS }) level!: string;
  @ApiProperty() message!: string;
  @ApiPropertyOptional({ nullable: true, type: 'object', additionalProperties: true })
  fields!: Record<string, unknown> | null;
}

export class AttemptLogPageDto {
  @ApiProperty() task_id!: string;
  @ApiProperty({ type: 'integer' }) attempt!: number;
  @ApiProperty({ type: [AttemptLogLineDto], description: 'oldest first' })
  items!: AttemptLogLineDto[];
  @ApiProperty({
    type: 'integer',
    description: 'pass as `after` for what comes next (more of this page, or lines logged later)',
  })
  next_after!: number;
  @ApiProperty({ description: 'more lines are kept after this page already' })
  has_more!: boolean;
  @ApiProperty({
    type: 'integer',
    description:
      'how many of the attempt’s oldest lines were dropped to keep it within its caps (BATON_ATTEMPT_LOG_MAX_LINES, _MAX_BYTES)',
  })
  dropped!: number;
}

export const toLogLineDto = (l: AttemptLogLine): AttemptLogLineDto => ({
  seq: l.seq,
  at: new Date(l.at).toISOString(),
  level: l.level,
  message: l.message,
  fields: l.fields,
});

export const toLogPageDto = (
  taskId: string,
  attempt: number,
  p: AttemptLogPage,
): AttemptLogPageDto => ({
  task_id: taskId,
  attempt,
  items: p.lines.map(toLogLineDto),
  next_after: p.nextAfter,
  has_more: p.more,
  dropped: p.dropped,
});
