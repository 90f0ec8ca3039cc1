import { Controller, Get, Headers, Query, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ContractErrorCode } from '@baton/task-contract';
import { Access, TenantFields } from '../auth';
import { ApiErrors, Clock } from '../common';
import { EventStreamReply } from './event-stream-reply';
import { TailedTaskEvent } from '../task-store';
import { TaskChangesQuery } from './dto/task-changes.query';
import { TaskChangeStream, TaskChangeWatcher } from './task-change-stream';

/** An event as the stream sends it (`data:` of an `event: task`). */
function wire(e: TailedTaskEvent): Record<string, unknown> {
  return {
    event_id: e.id,
    task_id: e.taskId,
    task_type: e.taskType,
    tenant: e.tenant,
    control_task_id: e.controlTaskId,
    from: e.from,
    to: e.to,
    outcome: e.outcome,
    attempt: e.attempt,
    reason: e.reason,
    actor: e.actor,
    at: new Date(e.at).toISOString(),
  };
}

@ApiTags('tasks')
@Controller('v1/task-changes')
export class TaskChangesController {
  constructor(
    private readonly stream: TaskChangeStream,
    private readonly clock: Clock,
  ) {}

  @Access('read')
  @Get('stream')
  @TenantFields('query.tenant')
  @ApiOperation({
    summary: 'a server-sent-events stream of task status changes (live views)',
    description: [
      'Each transition and note of the lifecycle log of the tasks the filters select, as',
      '`event: task` with the change as JSON in `data:`, soon after it commits on any instance.',
      'The `id:` of each message is a place in the log: send it back as `Last-Event-ID` on',
      'reconnecting and up to 1,000 missed events are replayed; past that an `event: reset`',
      'says to read the views again. Delivery is at least once; an event may come late (its',
      'transaction committed after later ones), so a view re-reads the task an event names.',
      'A key of one tenant receives its own tenant only, and no bare `id:` messages (a fleet-wide',
      'key gets one when changes it did not ask for go by). A comment line is sent every 15 s; the',
      'scheduler ends a stream after `max_seconds` or BATON_STREAM_MAX_SECONDS (then reconnect).',
    ].join(' '),
  })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({
    schema: { type: 'string' },
    description: 'text/event-stream, open until the client or the server ends it',
  })
  @ApiErrors(ContractErrorCode.NOT_READY, ContractErrorCode.OVERLOADED)
  async open(
    @Query() q: TaskChangesQuery,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const out = new EventStreamReply(reply, this.clock);
    const watcher: TaskChangeWatcher = {
      filter: {
        tenant: q.tenant,
        taskTypes: q.task_type ? new Set(q.task_type) : undefined,
        taskIds: q.task_id ? new Set(q.task_id) : undefined,
        controlTaskId: q.control_task_id,
      },
      send: (events, mark) => {
        // Every message's id is where to resume from: at or below the lowest event not yet
        // surely seen, so a reconnect may repeat events but never skips one.
        let text = '';
        for (const e of events)
          text += `id: ${mark}\nevent: task\ndata: ${JSON.stringify(wire(e))}\n\n`;
        if (events.length === 0) text = `id: ${mark}\n\n`;
        out.write(text);
      },
      reset: (mark) => out.write(`event: reset\nid: ${mark}\ndata: {}\n\n`),
      end: () => out.end(),
    };
    const resumeFrom = /^\d{1,15}$/.test(lastEventId ?? '') ? Number(lastEventId) : undefined;
    req.raw.once('close', () => out.end());
    // Refusals (shutting down, too many watchers) throw before anything is written: the
    // envelope answers them.
    const leave = await this.stream.join(watcher, resumeFrom);
    out.write(''); // the headers go now, even with nothing to tell yet
    out.live(leave, 1000 * Math.min(q.max_seconds ?? Infinity, this.stream.maxSeconds));
  }
}
