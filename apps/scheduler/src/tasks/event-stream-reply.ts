import type { FastifyReply } from 'fastify';
import { Clock, Timer } from '../common';

/** A comment line now and then keeps proxies from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;
/** A client this far behind (bytes not taken by its socket) is cut off; it reconnects and resumes. */
const MAX_BUFFERED = 1024 * 1024;

/** The raw answer of one stream: headers on the first write, keep-alive comments, its end. */
export class EventStreamReply {
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
