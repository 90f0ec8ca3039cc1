import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { TaskStatus } from '../enums/task-status.enum';
import { CreateInfoDto } from './create-info.dto';
import { ProcessArgDto } from './process-arg.dto';

/** Where a run stands, as the worker last reported it. */
export class ProgressDto {
  @ApiProperty({ minimum: 0, maximum: 100 })
  percent!: number;

  @ApiPropertyOptional({ nullable: true, type: String, example: 'copying binlog' })
  step!: string | null;

  @ApiPropertyOptional({ nullable: true, type: String })
  message!: string | null;

  @ApiPropertyOptional({ nullable: true, type: String, format: 'date-time' })
  updated_at!: string | null;
}

/** Why a run failed. */
export class TaskErrorDto {
  @ApiProperty()
  message!: string;

  @ApiPropertyOptional({ nullable: true, type: String })
  code?: string | null;
}

/** Everything the worker knows about a task: the answer of create, query and every changing call. */
export class TaskViewDto {
  @ApiProperty()
  task_id!: string;

  @ApiProperty()
  task_type!: string;

  @ApiProperty()
  task_name!: string;

  @ApiProperty({ enum: TaskStatus, enumName: 'TaskStatus' })
  task_status!: TaskStatus;

  @ApiProperty({ type: 'integer', minimum: 1 })
  attempt!: number;

  @ApiProperty({ type: 'integer', description: 'highest X-Baton-Fence accepted for this task' })
  fence!: number;

  @ApiProperty({ type: CreateInfoDto })
  create_info!: CreateInfoDto;

  @ApiProperty({ type: ProcessArgDto })
  process_arg!: ProcessArgDto;

  @ApiProperty({ type: 'object', additionalProperties: true })
  params!: Record<string, unknown>;

  @ApiProperty({ type: [String] })
  lock_keys!: string[];

  @ApiProperty({ type: ProgressDto })
  progress!: ProgressDto;

  @ApiPropertyOptional({ nullable: true, type: String, format: 'date-time' })
  heartbeat_at!: string | null;

  @ApiPropertyOptional({ nullable: true, type: 'object', additionalProperties: true })
  result!: Record<string, unknown> | null;

  @ApiPropertyOptional({ nullable: true, type: TaskErrorDto })
  error!: TaskErrorDto | null;

  @ApiProperty({ format: 'date-time' })
  created_at!: string;

  @ApiProperty({ format: 'date-time' })
  updated_at!: string;
}

/** Answer of `query`: the tasks matching task_id and/or task_name. */
export class QueryResultDto {
  @ApiProperty({ type: [TaskViewDto] })
  items!: TaskViewDto[];
}

/** Answer of `status`. An unknown task_id answers NONE (not 404): the scheduler re-creates it. */
export class StatusDto {
  @ApiProperty()
  task_id!: string;

  @ApiProperty({ enum: TaskStatus, enumName: 'TaskStatus' })
  task_status!: TaskStatus;

  @ApiProperty({ type: 'integer', minimum: 0, description: '0 when the task is unknown' })
  attempt!: number;
}

/** Answer of `heartbeat`: is the execution alive. */
export class HeartbeatDto {
  @ApiProperty()
  task_id!: string;

  @ApiProperty({
    description:
      'an execution of the current attempt runs in this worker process and beat within the ' +
      'type’s window (the template uses 5–15 s). Meaningful for RUNNING tasks; false after a ' +
      'worker restart even if the stored status still says RUNNING.',
  })
  alive!: boolean;

  @ApiProperty({ enum: TaskStatus, enumName: 'TaskStatus' })
  task_status!: TaskStatus;

  @ApiPropertyOptional({ nullable: true, type: String, format: 'date-time' })
  heartbeat_at!: string | null;

  /**
   * True when the worker holds the attempt as RUNNING but no execution of it exists in this
   * process: the run died with an earlier process of the worker (a crash, a restart). Absent
   * means false. See "Crash recovery" in the contract.
   */
  @ApiPropertyOptional({
    description:
      'true: the task is RUNNING here but no execution of the attempt exists in this worker ' +
      'process (the run died with an earlier process: a crash or restart), so nothing will ' +
      'report an outcome for it. The scheduler then gives the attempt up at once and starts a ' +
      'recovery (see "Crash recovery"). Absent means false. Never true while an execution ' +
      'exists, however late its last beat.',
  })
  execution_lost?: boolean;
}

/** Answer of `progress`. */
export class ProgressViewDto extends ProgressDto {
  @ApiProperty()
  task_id!: string;

  @ApiProperty({ enum: TaskStatus, enumName: 'TaskStatus' })
  task_status!: TaskStatus;
}

/** Answer of `summary`: the result and a line for people. */
export class SummaryDto {
  @ApiProperty()
  task_id!: string;

  @ApiProperty({ enum: TaskStatus, enumName: 'TaskStatus' })
  task_status!: TaskStatus;

  @ApiProperty({ example: 'SUCCESS: echoed 2 fields', description: 'free text for people' })
  summary!: string;

  @ApiPropertyOptional({ nullable: true, type: 'object', additionalProperties: true })
  result!: Record<string, unknown> | null;

  @ApiPropertyOptional({ nullable: true, type: TaskErrorDto })
  error!: TaskErrorDto | null;
}
