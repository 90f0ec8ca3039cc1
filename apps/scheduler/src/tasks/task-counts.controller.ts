import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Envelope, ok } from '@baton/task-contract';
import { Access, AllTenants } from '../auth';
import { TaskCountDto, toTaskCountDto } from './dto/task-count.dto';
import { TasksService } from './tasks.service';

/**
 * The number of tasks by type and status, for an overview page or a script. The counts are kept
 * for all tenants together, so a key of one tenant is refused them (it lists its own tasks).
 */
@ApiTags('tasks')
@Controller('v1/task-counts')
export class TaskCountsController {
  constructor(private readonly tasks: TasksService) {}

  @Access('read')
  @AllTenants()
  @Get()
  @ApiOperation({
    summary: 'tasks by type and status, every count above zero (kept with each change, no scan)',
  })
  @ApiOkResponse({ type: [TaskCountDto] })
  async list(): Promise<Envelope<TaskCountDto[]>> {
    return ok((await this.tasks.countsByTypeAndStatus()).map(toTaskCountDto));
  }
}
