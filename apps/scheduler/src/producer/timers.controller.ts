import {
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  HttpCode,
  Inject,
  Param,
  Patch,
  Post,
  Query,
  Res,
} from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { ContractErrorCode, Envelope, ok } from '@baton/task-contract';
import { Metrics } from '../metrics';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import {
  CreateTimerDto,
  NEXT_FIRES,
  ProducerStatusDto,
  TimerPreviewDto,
  TimerDto,
  TimerRunNowDto,
  UpdateTimerDto,
  toTimerDto,
} from './dto/timer.dto';
import { ProducerOwnership } from './ownership';
import { ProducerService } from './producer.service';
import { TimersService } from './timers.service';
import { Access, Actor, AllTenants, Audited, TenantFields } from '../auth';
import { ApiErrors, IdGenerator, TenantQuery, idempotencyKeyOf } from '../common';

@ApiTags('timers')
@Access('operate')
@Controller('v1')
export class TimersController {
  constructor(
    private readonly timers: TimersService,
    private readonly ownership: ProducerOwnership,
    private readonly producer: ProducerService,
    private readonly metrics: Metrics,
    private readonly ids: IdGenerator,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  @Post('timers')
  @TenantFields('body.task.tenant', 'body.topology.tenant')
  @Audited('timer.create', 'timer_id')
  @HttpCode(201)
  @ApiOperation({
    summary:
      'define a timer: a task template fired by cron (with seconds and a time zone), interval, or once',
    description:
      'Each fire creates a task with repetition=timed, labels timer_id and fire_time, and the idempotency key timer:<id>:<slot ms>: no slot fires twice.',
  })
  @ApiOkResponse({ type: TimerDto })
  async create(@Body() dto: CreateTimerDto): Promise<Envelope<TimerDto>> {
    return ok(toTimerDto(await this.timers.create(dto)));
  }

  @Post('timers/preview')
  @TenantFields('body.task.tenant', 'body.topology.tenant')
  @HttpCode(200)
  @ApiOperation({
    summary: "a timer's next fires, from a create body checked as a create is, and nothing stored",
    description:
      "The body of `POST /v1/timers`, refused with the same 400 (a bad cron, an unknown time zone, a task type not registered...); when it would be accepted, the first five fire times by the Producer's own schedule code.",
  })
  @ApiOkResponse({ type: TimerPreviewDto })
  async preview(@Body() dto: CreateTimerDto): Promise<Envelope<TimerPreviewDto>> {
    const fires = await this.timers.preview(dto, NEXT_FIRES);
    return ok({ next_fires: fires.map((ms) => new Date(ms).toISOString()) });
  }

  @Access('read')
  @Get('timers')
  @TenantFields('query.tenant')
  @ApiOperation({ summary: 'list timers' })
  @ApiOkResponse({ type: [TimerDto] })
  async list(@Query() q: TenantQuery): Promise<Envelope<TimerDto[]>> {
    return ok((await this.timers.list(q.tenant)).map(toTimerDto));
  }

  @Access('read')
  @Get('timers/:timer_id')
  @ApiOperation({ summary: 'get a timer' })
  @ApiOkResponse({ type: TimerDto })
  async get(@Param('timer_id') id: string): Promise<Envelope<TimerDto>> {
    return ok(toTimerDto(await this.timers.get(id)));
  }

  @Patch('timers/:timer_id')
  @TenantFields('body.task.tenant', 'body.topology.tenant')
  @ApiErrors(ContractErrorCode.VERSION_CONFLICT)
  @Audited('timer.update', 'timer_id')
  @ApiOperation({ summary: 'change a timer; enabled=false stops it, true starts it again' })
  @ApiOkResponse({ type: TimerDto })
  async update(
    @Param('timer_id') id: string,
    @Body() dto: UpdateTimerDto,
  ): Promise<Envelope<TimerDto>> {
    return ok(toTimerDto(await this.timers.update(id, dto)));
  }

  @Post('timers/:timer_id/run')
  @Audited('timer.run', 'timer_id')
  @HttpCode(201)
  @ApiOperation({
    summary: 'fire a timer now, outside its schedule ("run now")',
    description:
      "Creates the task (or starts the topology run) one fire would, now, enabled or not, with the labels timer_id, fire_time and manual_fire=true, by the caller. The overlap policy holds: `skip` answers 409 while the previous fire is not finished; `cancel_previous` cancels it. The fire becomes the timer's last task; the schedule, its next fires and the fire counts stay as they are. A template refused now (its type gone, its params no longer valid) answers as the create would.",
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description:
      'Sent again with the same key, the request makes no second fire: it answers the first (created false). 1-100 printable ASCII characters.',
  })
  @ApiCreatedResponse({ type: TimerRunNowDto, description: 'the fire' })
  @ApiOkResponse({
    type: TimerRunNowDto,
    description: 'sent again with the Idempotency-Key of an earlier request: its fire, nothing new',
  })
  @ApiErrors(ContractErrorCode.ILLEGAL_TRANSITION)
  async runNow(
    @Param('timer_id') id: string,
    @Headers('idempotency-key') key: string | undefined,
    @Actor() actor: string,
    @Res({ passthrough: true }) reply: { status(code: number): unknown },
  ): Promise<Envelope<TimerRunNowDto>> {
    const fired = await this.timers.runNow(
      id,
      idempotencyKeyOf(key, 100) ?? this.ids.taskId(),
      actor,
    );
    reply.status(fired.created ? 201 : 200);
    return ok({
      timer_id: id,
      fire_time: new Date(fired.at).toISOString(),
      ...(fired.run ? { run_id: fired.taskId } : { task_id: fired.taskId }),
      created: fired.created,
    });
  }

  @Delete('timers/:timer_id')
  @Audited('timer.delete', 'timer_id')
  @ApiOperation({ summary: 'delete a timer (the tasks it created stay)' })
  @ApiOkResponse({
    schema: {
      type: 'object',
      required: ['timer_id'],
      properties: { timer_id: { type: 'string' } },
    },
  })
  async remove(@Param('timer_id') id: string): Promise<Envelope<{ timer_id: string }>> {
    await this.timers.remove(id);
    return ok({ timer_id: id });
  }

  @Access('read')
  @Get('producer')
  @AllTenants()
  @ApiOperation({
    summary: "this instance's Producer: ownership model, whether it fires, counters",
  })
  @ApiOkResponse({ type: ProducerStatusDto })
  async status(): Promise<Envelope<ProducerStatusDto>> {
    const view = this.ownership.view();
    return ok({
      mode: view.mode,
      active: view.active,
      members: view.members,
      instance_id: this.config.instanceId,
      owned_timers: await this.producer.ownedTimers(),
      counters: this.metrics.snapshot(),
    });
  }
}
