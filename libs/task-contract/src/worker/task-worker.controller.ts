import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Inject,
  Param,
  Post,
  Put,
  Query,
  Req,
  UseFilters,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import {
  ApiBody,
  ApiExtraModels,
  ApiHeader,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiResponse,
  ApiSecurity,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import { GET_ACTIONS, PUT_ACTIONS } from '../enums/task-action.enum';
import { ContractErrorCode, ContractException } from '../errors/contract.exception';
import { Envelope, ErrorEnvelopeDto, ok } from '../dto/envelope.dto';
import {
  ActionRequestDto,
  ChangeRequestDto,
  CreateTaskRequestDto,
  NotifyRequestDto,
  TASK_ID_PATTERN,
} from '../dto/worker-requests.dto';
import { TASK_TYPE_PATTERN } from '../dto/create-info.dto';
import {
  HeartbeatDto,
  ProgressViewDto,
  QueryResultDto,
  StatusDto,
  SummaryDto,
  TaskViewDto,
} from '../dto/worker-responses.dto';
import { callerGone } from '../util/caller-gone';
import { HEADER, parseFence } from '../util/headers';
import { validateDto } from '../util/validate';
import { ContractExceptionFilter } from './contract-exception.filter';
import { TaskWorkerService } from './task-worker.service';
import { WorkerAuthGuard } from './worker-auth.guard';
import { WorkerTracingInterceptor } from './worker-tracing';
import { CreateQueryDto, ReadQueryDto, WriteQueryDto } from './worker-query.dto';

type Ref = { $ref: string };
const ref = (model: abstract new (...args: never[]) => unknown): Ref => ({
  $ref: getSchemaPath(model),
});

/** `{code: 0, message: 'ok', data: <one of the given>}` */
function envelopeOf(...models: (abstract new (...args: never[]) => unknown)[]) {
  const data = models.length === 1 ? ref(models[0]) : { oneOf: models.map(ref) };
  return {
    type: 'object',
    required: ['code', 'message', 'data'],
    properties: {
      code: { type: 'integer', example: 0 },
      message: { type: 'string', example: 'ok' },
      data,
    },
  };
}

const errors = (...statuses: number[]) =>
  statuses.map((status) =>
    ApiResponse({
      status,
      description: `error envelope (codes ${status}xx)`,
      type: ErrorEnvelopeDto,
    }),
  );

function ApiErrors(...statuses: number[]): MethodDecorator {
  return (target, key, descriptor) => {
    for (const decorate of errors(...statuses)) decorate(target, key, descriptor);
  };
}

const FENCE_HEADER = ApiHeader({
  name: 'X-Baton-Fence',
  required: true,
  description:
    'fencing token of the lock the scheduler holds; a lower value than already seen for the task is refused with 409 (code 40901) and changes nothing',
  schema: { type: 'integer', minimum: 0 },
});
const TASK_ID_SCHEMA = { type: 'string', pattern: TASK_ID_PATTERN.source };
const TASK_TYPE_QUERY_SCHEMA = {
  type: 'string',
  pattern: TASK_TYPE_PATTERN.source,
  description: 'optional repeat of the path’s task type; when given it must equal it (else 400)',
};
const REQUEST_ID_HEADER = ApiHeader({
  name: 'X-Request-Id',
  required: false,
  description: 'echo it in logs',
});
const TRACEPARENT_HEADER = ApiHeader({
  name: 'traceparent',
  required: false,
  description: 'W3C trace context',
});

/** Reads the fence of a changing call, refusing its absence (400 MISSING_FENCE). */
export function requireFence(value: string | undefined): number {
  const fence = parseFence(value);
  if (fence === undefined) {
    throw new ContractException(
      ContractErrorCode.MISSING_FENCE,
      'X-Baton-Fence must be a non-negative integer',
    );
  }
  return fence;
}

/** Refuses a `task_type` query parameter that differs from the path's (400). */
export function checkTypeParam(pathType: string, queryType: string | undefined): void {
  if (queryType !== undefined && queryType !== pathType) {
    throw new ContractException(
      ContractErrorCode.VALIDATION_FAILED,
      `task_type ${queryType} in the query does not match the path's ${pathType}`,
    );
  }
}

/**
 * The worker contract v1 (docs/architecture.md): one path per task type, the action in the query.
 * Translation only; every rule lives in TaskWorkerService.
 */
@ApiTags('worker contract v1')
@ApiSecurity('token')
@ApiSecurity('hmac')
@ApiExtraModels(
  TaskViewDto,
  QueryResultDto,
  StatusDto,
  HeartbeatDto,
  ProgressViewDto,
  SummaryDto,
  ActionRequestDto,
  ChangeRequestDto,
  NotifyRequestDto,
  CreateTaskRequestDto,
)
@ApiParam({
  name: 'task_type',
  description: 'the task type, e.g. mysql.failover',
  example: 'demo.echo',
  schema: { type: 'string', pattern: TASK_TYPE_PATTERN.source },
})
@REQUEST_ID_HEADER
@TRACEPARENT_HEADER
@UseGuards(WorkerAuthGuard)
@UseFilters(ContractExceptionFilter)
@UseInterceptors(WorkerTracingInterceptor)
@Controller('v1/task')
export class TaskWorkerController {
  constructor(@Inject(TaskWorkerService) private readonly worker: TaskWorkerService) {}

  @Post(':task_type')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'create',
    summary: 'create: accept a task',
    description:
      'Records the task in status CREATE. Idempotent on (task_id, attempt): repeating it (or sending ' +
      'a lower attempt) answers the stored task and changes nothing but its fence, raised when the ' +
      'new one is higher. A higher attempt of a task in FAIL, NONE, POSTPONE, PAUSE or RUNNING ' +
      '(a run the scheduler gave up on; the worker stops it first), SUCCESS (the next life of a ' +
      'permanent task), FINISH (a re-run), or CREATE / PREPARE (an attempt that never ran) starts ' +
      'the task again in CREATE; from ROLLBACK it is 409 (40900). ' +
      'create_info.task_type must equal the path. Unknown fields are refused (400). ' +
      'With `action=running` (optional call `create_run`, declared for sync types with nothing to ' +
      "prepare) the created attempt is run in the same request, and the answer is the run's " +
      '(SUCCESS or FAIL); a repeat of an attempt already past CREATE answers what is there. ' +
      'A process_arg.start_time up to 1 s ahead is waited for before the run begins: the ' +
      'scheduler sends a timed start a moment early. One further ahead (clock skew) runs at once.',
  })
  @FENCE_HEADER
  @ApiQuery({ name: 'action', required: false, enum: ['running'] })
  @ApiBody({ type: CreateTaskRequestDto })
  @ApiResponse({ status: 200, description: 'the task', schema: envelopeOf(TaskViewDto) })
  @ApiErrors(400, 401, 404, 409, 413, 415)
  async create(
    @Param('task_type') taskType: string,
    @Headers(HEADER.FENCE) fence: string | undefined,
    @Body() body: unknown,
    @Req() req: unknown,
    @Query() rawQuery: unknown,
  ): Promise<Envelope<TaskViewDto>> {
    // Unknown query parameters are refused here as on every other call.
    const { action } = validateDto(CreateQueryDto, rawQuery);
    if (action === undefined)
      return ok(await this.worker.create(taskType, requireFence(fence), body));
    return ok(await this.worker.createAndRun(taskType, requireFence(fence), body, callerGone(req)));
  }

  @Get(':task_type')
  @ApiOperation({
    operationId: 'read',
    summary: 'query | status | heartbeat | progress | summary',
    description: [
      'Reads; changes nothing. The `action` query parameter picks the call:',
      '- absent (**query**): `task_id` and/or `task_name` → `QueryResultDto` (items, possibly empty);',
      '- `status`: `task_id` → `StatusDto`; an unknown task answers task_status NONE with code 0;',
      '- `heartbeat`: `task_id` → `HeartbeatDto`; alive is true only while an execution of the current attempt runs and beats; `execution_lost` is true for a RUNNING task whose run died with an earlier process of the worker (see Crash recovery);',
      '- `progress`: `task_id` → `ProgressViewDto` (404 for an unknown task);',
      '- `summary`: `task_id` → `SummaryDto` (404 for an unknown task).',
    ].join('\n'),
  })
  @ApiQuery({ name: 'task_id', required: false, schema: TASK_ID_SCHEMA })
  @ApiQuery({ name: 'task_name', required: false, schema: { type: 'string', maxLength: 200 } })
  @ApiQuery({ name: 'task_type', required: false, schema: TASK_TYPE_QUERY_SCHEMA })
  @ApiQuery({ name: 'action', required: false, enum: GET_ACTIONS })
  @ApiResponse({
    status: 200,
    description: 'depends on action',
    schema: envelopeOf(QueryResultDto, StatusDto, HeartbeatDto, ProgressViewDto, SummaryDto),
  })
  @ApiErrors(400, 401, 404)
  async read(
    @Param('task_type') taskType: string,
    @Query() rawQuery: unknown,
  ): Promise<Envelope<QueryResultDto | StatusDto | HeartbeatDto | ProgressViewDto | SummaryDto>> {
    const q = validateDto(ReadQueryDto, rawQuery);
    checkTypeParam(taskType, q.task_type);
    if (q.action === undefined)
      return ok(await this.worker.query(taskType, q.task_id, q.task_name));
    if (q.task_id === undefined) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `action=${q.action} needs task_id`,
      );
    }
    switch (q.action) {
      case 'status':
        return ok(await this.worker.status(taskType, q.task_id));
      case 'heartbeat':
        return ok(await this.worker.heartbeat(taskType, q.task_id));
      case 'progress':
        return ok(await this.worker.progress(taskType, q.task_id));
      case 'summary':
        return ok(await this.worker.summary(taskType, q.task_id));
      default:
        throw new ContractException(
          ContractErrorCode.VALIDATION_FAILED,
          `unknown action ${String(q.action)}`,
        );
    }
  }

  @Put(':task_type')
  @ApiOperation({
    operationId: 'write',
    summary: 'notify | running | pause | continue | prepare | rollback | change | clean',
    description: [
      'Changes the task named by `task_id`. The `action` query parameter picks the call; every one',
      'answers the task (`TaskViewDto`) after the change:',
      '- absent (**notify**): body `NotifyRequestDto`. cancel and deadline stop a run (FAIL when it stops) or fail a task not yet running;',
      '- `running`: from CREATE or PREPARE. A sync type answers the outcome (SUCCESS/FAIL); an async type answers RUNNING and reports later;',
      '- `pause`: from CREATE, PREPARE, POSTPONE, or RUNNING when the type declares `pause` (pausable while running; else 501);',
      '- `continue`: from PAUSE, back to the status it was paused in;',
      '- `prepare`: from CREATE or POSTPONE → PREPARE (FAIL with the reason when preconditions are not met);',
      '- `rollback`: from SUCCESS or FAIL → ROLLBACK; 501 when the type cannot undo;',
      '- `change`: body `ChangeRequestDto`; replaces params of a task not yet SUCCESS/FAIL/ROLLBACK/FINISH;',
      '- `clean`: from SUCCESS, FAIL, ROLLBACK or NONE → FINISH.',
      'Bodies of running/pause/continue/prepare/rollback/clean are empty or `ActionRequestDto`.',
      'A call the transition table does not allow is refused with 409 (code 40900) and changes nothing.',
    ].join('\n'),
  })
  @FENCE_HEADER
  @ApiQuery({ name: 'task_id', required: true, schema: TASK_ID_SCHEMA })
  @ApiQuery({ name: 'task_type', required: false, schema: TASK_TYPE_QUERY_SCHEMA })
  @ApiQuery({ name: 'action', required: false, enum: PUT_ACTIONS })
  @ApiBody({
    required: false,
    schema: { oneOf: [ref(NotifyRequestDto), ref(ChangeRequestDto), ref(ActionRequestDto)] },
  })
  @ApiResponse({
    status: 200,
    description: 'the task after the call',
    schema: envelopeOf(TaskViewDto),
  })
  @ApiErrors(400, 401, 404, 409, 413, 415, 501)
  async write(
    @Param('task_type') taskType: string,
    @Query() rawQuery: unknown,
    @Headers(HEADER.FENCE) fenceHeader: string | undefined,
    @Body() body: unknown,
    @Req() req: unknown,
  ): Promise<Envelope<TaskViewDto>> {
    const q = validateDto(WriteQueryDto, rawQuery);
    checkTypeParam(taskType, q.task_type);
    const fence = requireFence(fenceHeader);
    if (q.action === undefined)
      return ok(await this.worker.notify(taskType, q.task_id, fence, body));
    return ok(await this.worker.act(taskType, q.action, q.task_id, fence, body, callerGone(req)));
  }
}
