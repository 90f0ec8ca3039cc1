import { Controller, Get, Headers, Inject, Param, Query, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ContractErrorCode, ContractException, Envelope, ok } from '@baton/task-contract';
import { Access } from '../auth';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { AttemptLogsService } from './attempt-logs.service';
import {
  AttemptLogPageDto,
  AttemptLogQuery,
  toLogLineDto,
  toLogPageDto,
} from './dto/attempt-log.dto';
import { EventStreamReply } from './event-stream-reply';
import { TasksService } from './tasks.service';

/** How often a log stream looks for new lines. */
const STREAM_POLL_MS = 1000;

function attemptOf(value: string): number {
  if (!/^[1-9][0-9]{0,8}$/.test(value))
    throw new ContractException(
      ContractErrorCode.VALIDATION_FAILED,
      'attempt must be a whole number from 1',
      { attempt: value },
    );
  return Number(value);
}

/** What a task's worker logged in each attempt (docs/tasks.md, "Worker logs"). */
@ApiTags('tasks')
@Access('read')
@Controller('v1/tasks')
export class AttemptLogsController {
  constructor(
    private readonly logs: AttemptLogsService,
    private readonly tasks: TasksService,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  @Get(':task_id/attempts/:attempt/logs')
  @ApiOperation({
    summary: 'what the worker logged in an attempt, oldest first, a page at a time',
    description:
      'Lines the worker sent for the attempt (the worker library ships what handlers log with `ctx.log`), in the order it logged them, paged by `after` (a line’s seq). The lines of a worker that died stay. An attempt keeps at most BATON_ATTEMPT_LOG_MAX_LINES lines and _MAX_BYTES bytes; past them its oldest lines are dropped, and `dropped` says how many. An attempt with no lines (or none yet) answers an empty page.',
  })
  @ApiOkResponse({ type: AttemptLogPageDto })
  async page(
    @Param('task_id') taskId: string,
    @Param('attempt') attempt: string,
    @Query() q: AttemptLogQuery,
  ): Promise<Envelope<AttemptLogPageDto>> {
    const n = attemptOf(attempt);
    await this.tasks.get(taskId);
    return ok(toLogPageDto(taskId, n, await this.logs.page(taskId, n, q)));
  }

  @Get(':task_id/attempts/:attempt/logs/stream')
  @ApiOperation({
    summary: 'a server-sent-events stream of what the worker logs in an attempt, as it comes',
    description:
      'Each line as `event: log` with the line as JSON in `data:` and its seq as the message `id:`: the lines after `after` (or `Last-Event-ID` on a reconnect) first, then new ones as the scheduler receives them (looked for every second). `level` and `q` filter as on the page. The scheduler ends a stream after `max_seconds` or BATON_STREAM_MAX_SECONDS (then reconnect).',
  })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({
    schema: { type: 'string' },
    description: 'text/event-stream, open until the client or the server ends it',
  })
  async stream(
    @Param('task_id') taskId: string,
    @Param('attempt') attempt: string,
    @Query() q: AttemptLogQuery,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const n = attemptOf(attempt);
    // Refusals (no such task) answer in the envelope, before the stream starts.
    await this.tasks.get(taskId);
    const out = new EventStreamReply(reply, this.clock);
    let after = /^\d{1,10}$/.test(lastEventId ?? '') ? Number(lastEventId) : (q.after ?? -1);
    let pulling = false;
    const pull = async (): Promise<void> => {
      if (pulling) return;
      pulling = true;
      try {
        for (;;) {
          const page = await this.logs.page(taskId, n, { ...q, after, limit: 500 });
          let text = '';
          for (const l of page.lines)
            text += `id: ${l.seq}\nevent: log\ndata: ${JSON.stringify(toLogLineDto(l))}\n\n`;
          if (text) out.write(text);
          after = page.nextAfter;
          if (!page.more) break;
        }
      } catch {
        out.end(); // the client reconnects and resumes from the last id it got
      } finally {
        pulling = false;
      }
    };
    req.raw.once('close', () => out.end());
    out.write('');
    await pull();
    const timer = this.clock.setInterval(() => void pull(), STREAM_POLL_MS);
    timer.unref();
    const lifeS = Math.min(q.max_seconds ?? Infinity, this.config.api.streamMaxSeconds);
    out.live(() => this.clock.clearInterval(timer), 1000 * lifeS);
  }
}
