import { Body, Controller, Get, Param, Patch } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Envelope, ok } from '@baton/task-contract';
import { TaskTypeDto, UpdateTaskTypeDto, toTaskTypeDto } from './dto/task-type.dto';
import { TaskTypesService } from './task-types.service';
import { Access, Audited } from '../auth';

@ApiTags('task types')
@Access('admin')
@Controller('v1/task-types')
export class TaskTypesController {
  constructor(private readonly types: TaskTypesService) {}

  @Access('read')
  @Get()
  @ApiOperation({ summary: 'list task types' })
  @ApiOkResponse({ type: [TaskTypeDto] })
  async list(): Promise<Envelope<TaskTypeDto[]>> {
    return ok((await this.types.list()).map(toTaskTypeDto));
  }

  @Access('read')
  @Get(':task_type')
  @ApiOperation({ summary: 'get a task type' })
  @ApiOkResponse({ type: TaskTypeDto })
  async get(@Param('task_type') taskType: string): Promise<Envelope<TaskTypeDto>> {
    return ok(toTaskTypeDto(await this.types.get(taskType)));
  }

  @Patch(':task_type')
  @Audited('task-type.update', 'task_type')
  @ApiOperation({
    summary: 'set the policy of a task type (retries, backoff, timeouts, concurrency)',
  })
  @ApiOkResponse({ type: TaskTypeDto })
  async update(
    @Param('task_type') taskType: string,
    @Body() dto: UpdateTaskTypeDto,
  ): Promise<Envelope<TaskTypeDto>> {
    return ok(toTaskTypeDto(await this.types.update(taskType, dto)));
  }
}
