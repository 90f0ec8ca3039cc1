import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Param,
  Post,
  Put,
  Query,
  Res,
} from '@nestjs/common';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { ContractErrorCode, Envelope, ok } from '@baton/task-contract';
import {
  ChangeParamsDto,
  CreateTaskBatchDto,
  CreateTaskDto,
  RerunDto,
} from './dto/create-task.dto';
import { ListTasksQuery } from './dto/list-tasks.query';
import {
  TaskAttemptDto,
  TaskDto,
  TaskEventDto,
  TaskPageDto,
  toAttemptDto,
  toEventDto,
  toTaskDto,
} from './dto/task.dto';
import { IdempotencyService } from './idempotency.service';
import { TaskActionsService } from './task-actions.service';
import { TasksService } from './tasks.service';
import { Access, Actor, TenantFields } from '../auth';
import { ApiErrors, idempotencyKeyOf } from '../common';

interface ReplyLike {
  status(code: number): ReplyLike;
}

@ApiTags('tasks')
@Access('operate')
@Controller('v1/tasks')
export class TasksController {
  constructor(
    private readonly tasks: TasksService,
    private readonly actions: TaskActionsService,
    private readonly idempotency: IdempotencyService,
  ) {}

  @Post()
  @TenantFields('body.tenant')
  @HttpCode(201)
  @ApiOperation({
    summary: 'create a task',
    description:
      'Answers 201 with the new task, or 200 with the task an earlier create under the same idempotency_key made.',
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description:
      'A repeat answers the stored answer of the first request, as 200 where the first was 201 (waiting up to 2 s for one still in flight, then creating or finding the task under the same key itself); 422 on a different body.',
  })
  @ApiCreatedResponse({ type: TaskDto, description: 'the new task' })
  @ApiOkResponse({
    type: TaskDto,
    description:
      'a create sent again with the idempotency key (body or header) of an earlier one: the task that one made; nothing new',
  })
  @ApiErrors(ContractErrorCode.IDEMPOTENCY_MISMATCH)
  async create(
    @Body() dto: CreateTaskDto,
    @Headers('idempotency-key') key: string | undefined,
    @Res({ passthrough: true }) reply: ReplyLike,
    @Actor() actor: string,
  ): Promise<Envelope<TaskDto>> {
    const work = async () => {
      // The header's key is also the task's idempotency key (unless the body names one): a create
      // run again after a crash finds the task its first run wrote, instead of making another.
      const { task, created } = await this.tasks.create(
        key !== undefined && dto.idempotency_key === undefined
          ? { ...dto, idempotency_key: key }
          : dto,
        { actor },
      );
      return { status: created ? 201 : 200, body: ok(toTaskDto(task)) };
    };
    idempotencyKeyOf(key);
    const answer = key
      ? await this.idempotency.run(dto.tenant ?? 'default', key, dto, work)
      : await work();
    reply.status(answer.status);
    return answer.body as Envelope<TaskDto>;
  }

  @Post('batch')
  @TenantFields('body.tasks.*.tenant')
  @HttpCode(201)
  @ApiOperation({
    summary:
      'create up to 500 tasks, all or none; a task whose idempotency_key is taken answers the task holding it',
  })
  @ApiBody({ type: CreateTaskBatchDto })
  @ApiOkResponse({ type: [TaskDto] })
  async createBatch(
    @Body() dto: CreateTaskBatchDto,
    @Actor() actor: string,
  ): Promise<Envelope<TaskDto[]>> {
    return ok((await this.tasks.createBatch(dto.tasks, actor)).map(toTaskDto));
  }

  @Access('read')
  @Get()
  @TenantFields('query.tenant')
  @ApiOperation({ summary: 'list tasks, newest first, with filters and a cursor' })
  @ApiOkResponse({ type: TaskPageDto })
  async list(@Query() q: ListTasksQuery): Promise<Envelope<TaskPageDto>> {
    const page = await this.tasks.list(q);
    return ok({ items: page.items.map(toTaskDto), next_cursor: page.nextCursor });
  }

  @Access('read')
  @Get(':task_id')
  @ApiOperation({ summary: 'get a task' })
  @ApiOkResponse({ type: TaskDto })
  async get(@Param('task_id') taskId: string): Promise<Envelope<TaskDto>> {
    return ok(toTaskDto(await this.tasks.get(taskId)));
  }

  @Access('read')
  @Get(':task_id/events')
  @ApiOperation({ summary: 'the lifecycle log: every transition, who, when, why' })
  @ApiOkResponse({ type: [TaskEventDto] })
  async events(@Param('task_id') taskId: string): Promise<Envelope<TaskEventDto[]>> {
    return ok((await this.tasks.events(taskId)).map(toEventDto));
  }

  @Access('read')
  @Get(':task_id/attempts')
  @ApiOperation({ summary: 'one row per run attempt' })
  @ApiOkResponse({ type: [TaskAttemptDto] })
  async attempts(@Param('task_id') taskId: string): Promise<Envelope<TaskAttemptDto[]>> {
    return ok((await this.tasks.attempts(taskId)).map(toAttemptDto));
  }

  @Post(':task_id/pause')
  @HttpCode(200)
  @ApiOperation({
    summary: 'pause (INIT, CREATE, PREPARE, POSTPONE, or RUNNING when the type can)',
  })
  @ApiOkResponse({ type: TaskDto })
  @ApiErrors(
    ContractErrorCode.ILLEGAL_TRANSITION,
    ContractErrorCode.VERSION_CONFLICT,
    ContractErrorCode.NOT_IMPLEMENTED,
    ContractErrorCode.WORKER_UNAVAILABLE,
  )
  async pause(
    @Param('task_id') taskId: string,
    @Actor() actor: string,
  ): Promise<Envelope<TaskDto>> {
    return ok(toTaskDto(await this.actions.pause(taskId, actor)));
  }

  @Post(':task_id/continue')
  @HttpCode(200)
  @ApiOperation({ summary: 'continue a paused task where it was' })
  @ApiOkResponse({ type: TaskDto })
  @ApiErrors(
    ContractErrorCode.ILLEGAL_TRANSITION,
    ContractErrorCode.VERSION_CONFLICT,
    ContractErrorCode.WORKER_UNAVAILABLE,
  )
  async continue(
    @Param('task_id') taskId: string,
    @Actor() actor: string,
  ): Promise<Envelope<TaskDto>> {
    return ok(toTaskDto(await this.actions.continue(taskId, actor)));
  }

  @Post(':task_id/cancel')
  @HttpCode(200)
  @ApiOperation({
    summary: 'cancel: a running task is told to stop; no retry follows',
    description:
      'A RUNNING task is cancelled at once, even while a runner drives it (a sync run holds its ' +
      'claim until the worker answers): cancel_requested is recorded, the worker is told to stop, ' +
      'and the end of the run finishes the task without a retry. If the worker cannot be told, ' +
      'the answer is 503 and the cancel stays recorded. A task in another status that a runner ' +
      'is moving at that moment answers 409 for a moment: try again.',
  })
  @ApiOkResponse({ type: TaskDto })
  @ApiErrors(
    ContractErrorCode.ILLEGAL_TRANSITION,
    ContractErrorCode.VERSION_CONFLICT,
    ContractErrorCode.WORKER_UNAVAILABLE,
  )
  async cancel(
    @Param('task_id') taskId: string,
    @Actor() actor: string,
  ): Promise<Envelope<TaskDto>> {
    return ok(toTaskDto(await this.actions.cancel(taskId, actor)));
  }

  @Post(':task_id/retry')
  @HttpCode(200)
  @ApiOperation({ summary: 'retry a failed task now (FAIL or NONE, not yet finished)' })
  @ApiOkResponse({ type: TaskDto })
  @ApiErrors(ContractErrorCode.ILLEGAL_TRANSITION, ContractErrorCode.VERSION_CONFLICT)
  async retry(
    @Param('task_id') taskId: string,
    @Actor() actor: string,
  ): Promise<Envelope<TaskDto>> {
    return ok(toTaskDto(await this.actions.retry(taskId, actor)));
  }

  @Post(':task_id/rerun')
  @HttpCode(200)
  @ApiOperation({
    summary: 'run a finished task again: same id, attempt + 1, a new fence, its history kept',
    description:
      'From FINISH, whatever its outcome (a cancelled task too). The new attempt starts as any start does: start checks, rate and concurrency limits, its lock keys, a worker. It has a fresh retry budget. With `params`, the attempt runs with those.',
  })
  @ApiOkResponse({ type: TaskDto })
  @ApiErrors(ContractErrorCode.ILLEGAL_TRANSITION, ContractErrorCode.VERSION_CONFLICT)
  async rerun(
    @Param('task_id') taskId: string,
    @Body() dto: RerunDto,
    @Actor() actor: string,
  ): Promise<Envelope<TaskDto>> {
    return ok(toTaskDto(await this.actions.rerun(taskId, dto?.params, actor)));
  }

  @Post(':task_id/rollback')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'roll back a task in SUCCESS or FAIL, or one that FINISHed with SUCCESS or FAIL (the type must implement rollback)',
    description:
      'A finished task is rolled back through its worker and FINISHes again with outcome ROLLBACK; a worker that no longer knows it cannot undo it, which the lifecycle log records.',
  })
  @ApiOkResponse({ type: TaskDto })
  @ApiErrors(
    ContractErrorCode.ILLEGAL_TRANSITION,
    ContractErrorCode.VERSION_CONFLICT,
    ContractErrorCode.NOT_IMPLEMENTED,
  )
  async rollback(
    @Param('task_id') taskId: string,
    @Actor() actor: string,
  ): Promise<Envelope<TaskDto>> {
    return ok(toTaskDto(await this.actions.rollback(taskId, actor)));
  }

  @Put(':task_id/params')
  @ApiOperation({ summary: 'change the params of a task not yet decided' })
  @ApiOkResponse({ type: TaskDto })
  @ApiErrors(
    ContractErrorCode.ILLEGAL_TRANSITION,
    ContractErrorCode.VERSION_CONFLICT,
    ContractErrorCode.NOT_IMPLEMENTED,
    ContractErrorCode.WORKER_UNAVAILABLE,
  )
  async change(
    @Param('task_id') taskId: string,
    @Body() dto: ChangeParamsDto,
    @Actor() actor: string,
  ): Promise<Envelope<TaskDto>> {
    return ok(toTaskDto(await this.actions.changeParams(taskId, dto.params, actor)));
  }
}
