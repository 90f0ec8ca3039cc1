import { Controller, Get, Headers, Query, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ContractErrorCode } from '@baton/task-contract';
import { Access, TenantFields } from '../auth';
import { ApiErrors, Clock, Timer } from '../common';
import { TailedTaskEvent } from '../task-store';
import { TaskChangesQuery } from './dto/task-changes.query';
import { TaskChangeStream, TaskChangeWatcher } from './task-change-stream';

/** A comment line now and then keeps proxies from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;
/** A client this far behind (bytes not taken by its socket) is cut off; it reconnects and resumes. */
const MAX_BUFFERED = 1024 * 1024;

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
      'A key of one tenant receives its own tenant only. A comment line is sent every 15 s; the',
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

/** The raw answer of one stream: headers on the first write, keep-alive comments, its end. */
class EventStreamReply {
  private started = false;
  private ended = false;
  private readonly timers: Timer[] = [];
  private leave: (() => void) | undefined;

  constructor(
    private readonly reply: FastifyReply,
    private readonly clock: Clock,
  ) {}

  write(text: string): void {
    if (this.ended) return;
    const raw = this.reply.raw;
    if (!this.started) {
      this.started = true;
      this.reply.hijack();
      raw.writeHead(200, {
        ...(this.reply.getHeaders() as Record<string, string>),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
        connection: 'keep-alive',
      });
      raw.write('retry: 2000\n\n');
    }
    if (text) raw.write(text);
    if (raw.writableLength > MAX_BUFFERED) this.end();
  }

  /** Joined: `leave` is called at the end, which comes after `lifeMs` at the latest. */
  live(leave: () => void, lifeMs: number): void {
    this.leave = leave;
    if (this.ended) return leave(); // the client went while it joined
    const keepalive = this.clock.setInterval(() => this.write(': keepalive\n\n'), KEEPALIVE_MS);
    const life = this.clock.setTimeout(() => this.end(), lifeMs);
    keepalive.unref();
    life.unref();
    this.timers.push(keepalive, life);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const t of this.timers) this.clock.clearTimeout(t);
    this.leave?.();
    if (this.started) this.reply.raw.end();
  }
}
