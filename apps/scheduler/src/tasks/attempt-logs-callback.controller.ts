import { Body, Controller, Put, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import {
  ATTEMPT_LOGS_MAX_BATCHES,
  ATTEMPT_LOGS_MAX_LINES,
  AttemptLogBatchesDto,
  AttemptLogVerdict,
  ContractErrorCode,
  ContractException,
  Envelope,
  WorkerAuthGuard,
  ok,
} from '@baton/task-contract';
import { Access } from '../auth';
import { ApiErrors } from '../common';
import { AttemptLogsService } from './attempt-logs.service';

const VERDICTS = {
  type: 'object',
  required: ['results'],
  properties: {
    results: {
      type: 'array',
      description: 'one per batch, in the order sent',
      items: {
        type: 'object',
        required: ['task_id', 'attempt'],
        properties: {
          task_id: { type: 'string' },
          attempt: { type: 'integer' },
          accepted: { type: 'integer', description: 'lines kept now (absent when refused)' },
          duplicates: {
            type: 'integer',
            description: 'lines sent before (same seq), kept once (absent when refused)',
          },
          refused: {
            type: 'string',
            enum: ['unknown', 'stale'],
            description:
              'the batch was dropped: `unknown` task, or `stale`: the attempt is not one the scheduler gave the task or the fence is not one it was driven with (drop these lines, as a 409 of the per-task call says)',
          },
        },
      },
    },
  },
};

/** Worker log lines of many attempts in one call (docs/worker-contract.md, "Callbacks"). */
@ApiTags('worker callbacks')
@ApiSecurity('hmac')
@UseGuards(WorkerAuthGuard)
@Access('worker')
@Controller('v1/attempt-logs')
export class AttemptLogsCallbackController {
  constructor(private readonly logs: AttemptLogsService) {}

  @Put()
  @ApiOperation({
    summary: 'a worker sends the lines it logged for many attempts at once',
    description: `What \`PUT /v1/tasks/{task_id}/logs\` takes, for up to ${ATTEMPT_LOGS_MAX_BATCHES} attempts of any tasks and ${ATTEMPT_LOGS_MAX_LINES} lines in all: each batch names its task, attempt and fence (no X-Baton-Fence header; the signature covers the body). Each batch is kept or refused on its own; the answer says which, in order. Retry the whole call on a network error, a timeout or a 5xx (a line sent again is kept once).`,
  })
  @ApiOkResponse({ schema: VERDICTS })
  @ApiErrors(ContractErrorCode.VALIDATION_FAILED)
  async put(
    @Body() dto: AttemptLogBatchesDto,
  ): Promise<Envelope<{ results: AttemptLogVerdict[] }>> {
    const lines = dto.batches.reduce((n, b) => n + b.lines.length, 0);
    if (lines > ATTEMPT_LOGS_MAX_LINES)
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `${lines} lines in all: at most ${ATTEMPT_LOGS_MAX_LINES} in one call`,
        { lines, max: ATTEMPT_LOGS_MAX_LINES },
      );
    // Queued together: the first starts a group at once, the rest share the next one.
    const verdicts = await Promise.all(
      dto.batches.map((b) => this.logs.fromWorker(b.task_id, b.fence, b)),
    );
    return ok({
      results: verdicts.map((v, i) => ({
        task_id: dto.batches[i].task_id,
        attempt: dto.batches[i].attempt,
        ...(typeof v === 'string' ? { refused: v } : v),
      })),
    });
  }
}
