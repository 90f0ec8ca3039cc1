import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Envelope, ok } from '@baton/task-contract';
import { Access, AllTenants } from '../auth';
import { TaskCountDto, toTaskCountDto } from './dto/task-count.dto';
import {
  BacklogDto,
  TaskHistoryDto,
  TaskHistoryQuery,
  toBacklogDto,
  toTaskMinuteDto,
} from './dto/task-history.dto';
import { TaskOverviewService } from './task-overview.service';
import { TasksService } from './tasks.service';

/**
 * The number of tasks by type and status, finished per minute, and waiting: for an overview page
 * or a script. They are kept for all tenants together, so a key of one tenant is refused them (it
 * lists its own tasks).
 */
@ApiTags('tasks')
@Access('read')
@AllTenants()
@Controller('v1/task-counts')
export class TaskCountsController {
  constructor(
    private readonly tasks: TasksService,
    private readonly overview: TaskOverviewService,
  ) {}

  @Get()
  @ApiOperation({
    summary: 'tasks by type and status, every count above zero (kept with each change, no scan)',
  })
  @ApiOkResponse({ type: [TaskCountDto] })
  async list(): Promise<Envelope<TaskCountDto[]>> {
    return ok((await this.tasks.countsByTypeAndStatus()).map(toTaskCountDto));
  }

  @Get('history')
  @ApiOperation({
    summary:
      'tasks finished per minute by type and outcome, over the last minutes (kept with each change, no scan)',
    description:
      'Counted when a task moves to FINISH, in the same transaction; the last 6 hours are kept.',
  })
  @ApiOkResponse({ type: TaskHistoryDto })
  async history(@Query() q: TaskHistoryQuery): Promise<Envelope<TaskHistoryDto>> {
    const minutes = q.minutes ?? 60;
    const { from, to, rows } = await this.overview.finishedPerMinute(minutes);
    return ok({
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      minutes,
      buckets: rows.map(toTaskMinuteDto),
    });
  }

  @Get('backlog')
  @ApiOperation({
    summary: 'tasks due and waiting for an attempt, by type and priority, with the oldest wait',
    description:
      'INIT, POSTPONE, NONE, or FAIL with a retry to come, whose start time has passed (the autoscaling signal of /metrics). Read through the index of due tasks; one read serves every caller for 2 s.',
  })
  @ApiOkResponse({ type: [BacklogDto] })
  async backlog(): Promise<Envelope<BacklogDto[]>> {
    const { at, rows } = await this.overview.backlog();
    return ok(
      rows
        .map((r) => toBacklogDto(r, at))
        .sort((a, b) => a.task_type.localeCompare(b.task_type) || b.priority - a.priority),
    );
  }
}
