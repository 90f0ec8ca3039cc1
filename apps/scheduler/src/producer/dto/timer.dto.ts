import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsBoolean,
  IsDateString,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { CreateTaskDto } from '../../tasks';
import { StartRunDto, TOPOLOGY_NAME } from '../../topologies';
import {
  MISFIRE_POLICIES,
  MisfirePolicy,
  OVERLAP_POLICIES,
  OverlapPolicy,
  TimerModel,
  isTopologyTemplate,
  upcomingFires,
} from '../timer.model';

/** How many coming fires a timer (and a preview) shows. */
export const NEXT_FIRES = 5;

const KINDS = ['cron', 'interval', 'once'] as const;

/** A timer's fires start runs of this definition. */
export class TimerTopologyDto extends StartRunDto {
  @ApiProperty({ description: 'the definition', pattern: TOPOLOGY_NAME.source })
  @Matches(TOPOLOGY_NAME, { message: 'topology.name must be a topology name' })
  name!: string;
}

/** When a timer fires. Exactly the fields of its kind are allowed. */
export class ScheduleDto {
  @ApiProperty({ enum: KINDS })
  @IsIn(KINDS)
  kind!: (typeof KINDS)[number];

  @ApiPropertyOptional({
    description: 'kind=cron: 6 fields with seconds first (`*/5 * * * * *`) or the classic 5',
    example: '0 */5 * * * *',
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  cron?: string;

  @ApiPropertyOptional({
    description: 'kind=cron: IANA time zone',
    default: 'UTC',
    example: 'Europe/Berlin',
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  time_zone?: string;

  @ApiPropertyOptional({ description: 'kind=interval: milliseconds between fires (at least 100)' })
  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(366 * 24 * 3600 * 1000)
  every_ms?: number;

  @ApiPropertyOptional({
    format: 'date-time',
    description:
      'kind=once: the instant (schedule_task(timestamp, task_data)); kind=interval: the first fire (default: start_at, else now + every_ms)',
  })
  @IsOptional()
  @IsDateString({ strict: true })
  at?: string;
}

/** Body of `POST /v1/timers`. */
export class CreateTimerDto {
  @ApiProperty({ maxLength: 200 })
  @IsString()
  @Length(1, 200)
  name!: string;

  @ApiProperty({ type: ScheduleDto })
  @IsObject()
  @ValidateNested()
  @Type(() => ScheduleDto)
  schedule!: ScheduleDto;

  @ApiPropertyOptional({
    type: CreateTaskDto,
    description:
      'the task each fire creates (its idempotency_key is set by the Producer: `timer:<id>:<slot ms>`); exactly one of task and topology',
  })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => CreateTaskDto)
  task?: CreateTaskDto;

  @ApiPropertyOptional({
    type: TimerTopologyDto,
    description:
      'the topology run each fire starts, keyed like a task (`timer:<id>:<slot ms>`), at its slot; exactly one of task and topology',
  })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => TimerTopologyDto)
  topology?: TimerTopologyDto;

  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'no slot before this instant (null: no bound; a PATCH with null removes it)',
  })
  @IsOptional()
  @IsDateString({ strict: true })
  start_at?: string | null;

  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'no slot after this instant (null: no bound; a PATCH with null removes it)',
  })
  @IsOptional()
  @IsDateString({ strict: true })
  end_at?: string | null;

  @ApiPropertyOptional({ default: true })
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({
    enum: OVERLAP_POLICIES,
    default: 'allow',
    description:
      "while the previous fire's task is not finished: skip this fire, fire anyway, or cancel the previous",
  })
  @IsOptional()
  @IsIn(OVERLAP_POLICIES)
  overlap_policy?: OverlapPolicy;

  @ApiPropertyOptional({
    enum: MISFIRE_POLICIES,
    default: 'fire_once',
    description:
      'slots missed while no owner ran (outage, failover): one fire now, a fire per missed slot, or none',
  })
  @IsOptional()
  @IsIn(MISFIRE_POLICIES)
  misfire_policy?: MisfirePolicy;

  @ApiPropertyOptional({
    default: 5000,
    description: 'a slot reached later than this (ms) is a misfire; earlier it just fires',
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(24 * 3600 * 1000)
  misfire_grace_ms?: number;
}

/** Body of `PATCH /v1/timers/{id}`: any field of the create body (the tenant stays). */
export class UpdateTimerDto extends PartialType(CreateTimerDto) {}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export class TimerDto {
  @ApiProperty() timer_id!: string;
  @ApiProperty() name!: string;
  @ApiProperty() tenant!: string;
  @ApiProperty({ type: ScheduleDto }) schedule!: ScheduleDto;
  @ApiProperty({ type: CreateTaskDto, nullable: true }) task!: CreateTaskDto | null;
  @ApiProperty({ type: TimerTopologyDto, nullable: true }) topology!: TimerTopologyDto | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) start_at!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) end_at!: string | null;
  @ApiProperty() enabled!: boolean;
  @ApiProperty({ enum: OVERLAP_POLICIES }) overlap_policy!: OverlapPolicy;
  @ApiProperty({ enum: MISFIRE_POLICIES }) misfire_policy!: MisfirePolicy;
  @ApiProperty() misfire_grace_ms!: number;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'null: no slot left',
  })
  next_fire_at!: string | null;
  @ApiProperty({
    type: [String],
    format: 'date-time',
    description: `the next ${NEXT_FIRES} fires from next_fire_at (fewer when the schedule or end_at stops first); none while disabled`,
  })
  next_fires!: string[];
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) last_fire_at!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_task_id!: string | null;
  @ApiProperty({ description: 'tasks created by this timer' }) fire_count!: number;
  @ApiProperty({ description: 'missed slots that did not fire (misfire policy fire_once or skip)' })
  misfire_count!: number;
  @ApiProperty({
    description: 'slots not fired by the overlap policy, or whose task could not be created',
  })
  skip_count!: number;
  @ApiProperty() version!: number;
  @ApiProperty({ format: 'date-time' }) created_at!: string;
  @ApiProperty({ format: 'date-time' }) updated_at!: string;
}

export function toTimerDto(t: TimerModel): TimerDto {
  const s = t.schedule;
  return {
    timer_id: t.timerId,
    name: t.name,
    tenant: t.tenant,
    schedule:
      s.kind === 'cron'
        ? { kind: 'cron', cron: s.cron, time_zone: s.timeZone }
        : s.kind === 'interval'
          ? { kind: 'interval', every_ms: s.everyMs, at: new Date(s.anchor).toISOString() }
          : { kind: 'once', at: new Date(s.at).toISOString() },
    task: isTopologyTemplate(t.template) ? null : t.template,
    topology: isTopologyTemplate(t.template) ? (t.template.topology as TimerTopologyDto) : null,
    start_at: iso(t.startAt),
    end_at: iso(t.endAt),
    enabled: t.enabled,
    overlap_policy: t.overlapPolicy,
    misfire_policy: t.misfirePolicy,
    misfire_grace_ms: t.misfireGraceMs,
    next_fire_at: iso(t.nextFireAt),
    next_fires: t.enabled
      ? upcomingFires(t, NEXT_FIRES).map((ms) => new Date(ms).toISOString())
      : [],
    last_fire_at: iso(t.lastFireAt),
    last_task_id: t.lastTaskId,
    fire_count: t.fireCount,
    misfire_count: t.misfireCount,
    skip_count: t.skipCount,
    version: t.version,
    created_at: new Date(t.createdAt).toISOString(),
    updated_at: new Date(t.updatedAt).toISOString(),
  };
}

/** The answer of `POST /v1/timers/preview`. */
export class TimerPreviewDto {
  @ApiProperty({
    type: [String],
    format: 'date-time',
    description: `the first ${NEXT_FIRES} fires of a timer made from this body now (fewer when the schedule or end_at stops first); a one-shot in the past fires at once`,
  })
  next_fires!: string[];
}

/** What `POST /v1/timers/{id}/run` made. */
export class TimerRunNowDto {
  @ApiProperty() timer_id!: string;

  @ApiProperty({ format: 'date-time', description: 'when it fired (its label fire_time)' })
  fire_time!: string;

  @ApiPropertyOptional({ description: 'the task the fire created (a timer that starts a task)' })
  task_id?: string;

  @ApiPropertyOptional({ description: 'the run the fire started (a timer that starts a topology)' })
  run_id?: string;

  @ApiProperty({
    description:
      'false when the request was sent before under the same Idempotency-Key: the first fire, nothing new',
  })
  created!: boolean;
}

export class ProducerStatusDto {
  @ApiProperty({ enum: ['standby', 'distributed'] }) mode!: string;
  @ApiProperty({
    description: 'standby: this instance leads; distributed: it holds its member lease',
  })
  active!: boolean;
  @ApiProperty({ type: [String], description: 'distributed: the live members this instance sees' })
  members!: string[];
  @ApiProperty({ description: 'this instance' }) instance_id!: string;
  @ApiProperty({ type: [String], description: 'the timers this instance fires now' })
  owned_timers!: string[];
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'number' },
    description: 'counters of this instance since it started',
  })
  counters!: Record<string, number>;
}
