import { Body, Controller, Headers, Param, Put, UseGuards } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import {
  CompletionCallbackDto,
  ContractErrorCode,
  ContractException,
  Envelope,
  HEADER,
  HeartbeatCallbackDto,
  LogBatchDto,
  ProgressCallbackDto,
  WorkerAuthGuard,
  ok,
  parseFence,
} from '@baton/task-contract';
import { TaskEngine, WorkerReports } from '../engine';
import { Access } from '../auth';
import { ApiErrors } from '../common';
import { AttemptLogsService } from './attempt-logs.service';

function fenceOf(value: string | undefined): number {
  const fence = parseFence(value);
  if (fence === undefined)
    throw new ContractException(
      ContractErrorCode.MISSING_FENCE,
      'X-Baton-Fence must be a non-negative integer',
    );
  return fence;
}

function answer(
  taskId: string,
  verdict: 'accepted' | 'stale' | 'unknown' | 'already',
): Envelope<{ task_id: string; accepted: boolean }> {
  if (verdict === 'unknown')
    throw new ContractException(ContractErrorCode.TASK_NOT_FOUND, `task ${taskId} does not exist`);
  if (verdict === 'stale') {
    throw new ContractException(
      ContractErrorCode.STALE_FENCE,
      `fence or attempt of task ${taskId} is not the current one`,
      { task_id: taskId },
    );
  }
  return ok({ task_id: taskId, accepted: verdict === 'accepted' });
}

const CALLBACK_ANSWER = {
  type: 'object',
  required: ['task_id', 'accepted'],
  properties: {
    task_id: { type: 'string' },
    accepted: {
      type: 'boolean',
      description:
        'false (notify only): the scheduler already had an outcome for this attempt (a repeat, or its poll found the outcome first); nothing changes and nothing is to be done',
    },
  },
};

const LOG_ANSWER = {
  type: 'object',
  required: ['task_id', 'accepted', 'duplicates'],
  properties: {
    task_id: { type: 'string' },
    accepted: { type: 'integer', description: 'lines kept now' },
    duplicates: { type: 'integer', description: 'lines sent before (same seq), kept once' },
  },
};

/** Where async workers report back (docs/architecture.md). Signed like every contract call, and fenced. */
@ApiTags('worker callbacks')
@ApiSecurity('hmac')
@ApiHeader({
  name: 'X-Baton-Fence',
  required: true,
  description: 'the fence the worker was called with; an old one is refused (409)',
})
@UseGuards(WorkerAuthGuard)
@Access('worker')
@Controller('v1/tasks/:task_id')
export class CallbacksController {
  constructor(
    private readonly reports: WorkerReports,
    private readonly engine: TaskEngine,
    private readonly attemptLogs: AttemptLogsService,
  ) {}

  @Put('notify')
  @ApiOperation({
    summary: 'an async worker reports the outcome of a run',
    description:
      'X-Baton-Fence: the highest fence the worker accepted for the task; attempt: the attempt that ran. 409 (40901): that attempt is not the current one any more (given up or replaced): drop the report, do not retry it. Retry only a network error, a timeout or a 5xx, a few times with backoff; the poll finds an outcome that could not be reported. A stop the scheduler asked for (cancel, deadline, a new attempt) is not reported.',
  })
  @ApiOkResponse({ schema: CALLBACK_ANSWER })
  @ApiErrors(ContractErrorCode.MISSING_FENCE, ContractErrorCode.STALE_FENCE)
  async notify(
    @Param('task_id') taskId: string,
    @Headers(HEADER.FENCE) fence: string | undefined,
    @Body() dto: CompletionCallbackDto,
  ) {
    const { verdict, task } = await this.reports.completeFromWorker(
      taskId,
      fenceOf(fence),
      dto.attempt,
      dto.task_status,
      dto.result ?? null,
      dto.error ?? null,
    );
    if (task) await this.engine.nudge(task);
    return answer(taskId, verdict);
  }

  @Put('heartbeat')
  @ApiOperation({
    summary: 'an async worker says the run is alive',
    description:
      'At least every heartbeat_interval_ms of the type (the registration answer states it). 409 (40901): the attempt is not the current one any more; its beats are dropped, and the scheduler tells the worker to drop the attempt (notify cancel).',
  })
  @ApiOkResponse({ schema: CALLBACK_ANSWER })
  @ApiErrors(ContractErrorCode.MISSING_FENCE, ContractErrorCode.STALE_FENCE)
  async heartbeat(
    @Param('task_id') taskId: string,
    @Headers(HEADER.FENCE) fence: string | undefined,
    @Body() dto: HeartbeatCallbackDto,
  ) {
    return answer(taskId, await this.reports.beatFromWorker(taskId, fenceOf(fence), dto.attempt));
  }

  @Put('progress')
  @ApiOperation({ summary: 'an async worker reports progress (also a heartbeat)' })
  @ApiOkResponse({ schema: CALLBACK_ANSWER })
  @ApiErrors(ContractErrorCode.MISSING_FENCE, ContractErrorCode.STALE_FENCE)
  async progress(
    @Param('task_id') taskId: string,
    @Headers(HEADER.FENCE) fence: string | undefined,
    @Body() dto: ProgressCallbackDto,
  ) {
    const progress = { percent: dto.percent, step: dto.step ?? null, message: dto.message ?? null };
    return answer(
      taskId,
      await this.reports.beatFromWorker(taskId, fenceOf(fence), dto.attempt, progress),
    );
  }

  @Put('logs')
  @ApiOperation({
    summary: 'a worker sends lines it logged while it ran an attempt',
    description:
      'Any worker, sync or async, while the attempt runs or after it ended. A batch of up to 500 lines, each with its seq within the attempt (from 0, one more per line): a line sent again is kept once, so a batch is retried whole on a network error, a timeout or a 5xx. X-Baton-Fence: a fence the attempt was driven with. 409 (40901): the attempt is not one the scheduler gave the task, or the fence is not one it was driven with: drop the batch. The scheduler keeps at most BATON_ATTEMPT_LOG_MAX_LINES lines and _MAX_BYTES bytes per attempt, dropping the oldest past them.',
  })
  @ApiOkResponse({ schema: LOG_ANSWER })
  @ApiErrors(ContractErrorCode.MISSING_FENCE, ContractErrorCode.STALE_FENCE)
  async logs(
    @Param('task_id') taskId: string,
    @Headers(HEADER.FENCE) fence: string | undefined,
    @Body() dto: LogBatchDto,
  ): Promise<Envelope<{ task_id: string; accepted: number; duplicates: number }>> {
    const verdict = await this.attemptLogs.fromWorker(taskId, fenceOf(fence), dto);
    if (verdict === 'unknown' || verdict === 'stale') answer(taskId, verdict);
    const kept = verdict as { accepted: number; duplicates: number };
    return ok({ task_id: taskId, accepted: kept.accepted, duplicates: kept.duplicates });
  }
}
