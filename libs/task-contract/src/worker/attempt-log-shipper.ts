import { Logger } from '@nestjs/common';
import { Clock, Timer } from '@baton/time';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import {
  ATTEMPT_LOGS_MAX_BATCHES,
  ATTEMPT_LOGS_MAX_LINES,
  AttemptLogBatchDto,
  LogLineDto,
} from '../dto/callback.dto';
import { ContractErrorCode } from '../errors/contract.exception';
import { StaleFenceError, TaskNotFoundError, WorkerCallError } from '../errors/worker-call.errors';
import { errorMessage } from '../util/error-message';
import { CallRoom } from './attempt-log-call-room';
import { WorkerCallbacks } from './worker-callbacks.interface';

export { lineSize } from './attempt-log-call-room';

/** What a handler logs with: lines that go to the scheduler, kept with the attempt. */
export interface RunLog {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /**
   * Logs a child process's output line by line: stdout as info, stderr as warn. Resolves when
   * both streams have ended.
   */
  pipe(child: ChildProcess): Promise<void>;
}

type Level = LogLineDto['level'];

/** Lines sent in one call at most (the contract's limit). */
const BATCH = 500;
/** After a scheduler without `PUT /v1/attempt-logs`, how long until it is tried again. */
const MANY_RETRY_MS = 600_000;
/** Lines waiting to go, per attempt, at most: past it the oldest are dropped (and said so). */
const MAX_PENDING = 10_000;
/** How often waiting lines go out; at once when a batch is full. */
const FLUSH_MS = 500;
/**
 * Lines logged since the last send began that make a call worth sending at once: under load the
 * calls go full and evenly spaced instead of a burst each FLUSH_MS, and lines wait (and live in
 * memory) a few milliseconds, not half a second.
 */
const FULL_CALL = ATTEMPT_LOGS_MAX_LINES / 2;
/** The longest wait between tries while the scheduler cannot be reached. */
const RETRY_MAX_MS = 30_000;
/** Attempts whose lines are sent at once (each attempt's own lines go in order). */
const IN_FLIGHT = 8;
/** The longest line kept: the contract's limit. */
const MAX_MESSAGE = 4000;

interface Pending {
  taskId: string;
  attempt: number;
  fence: number;
  next: number;
  lines: LogLineDto[];
  /** Lines dropped here since the last that went out (the scheduler could not be reached). */
  dropped: number;
}

/**
 * Ships what handlers log to the scheduler (`PUT /v1/tasks/{id}/logs`), per attempt, in order,
 * in batches: every half second, or at once when a batch is full. A batch that fails on the
 * network or a 5xx is sent again, whole and in order, with backoff, for as long as this process
 * lives: the scheduler keeps a line once by its seq, so a restart of the scheduler loses none.
 * A 409 or 404 drops the attempt's lines (the attempt is not the scheduler's any more).
 */
export class AttemptLogShipper {
  private readonly pending = new Map<string, Pending>();
  /** Attempts whose run ended: forgotten once their last lines went. */
  private readonly finished = new Set<string>();
  private timer: Timer | undefined;
  /** When the timer fires (Infinity without one). */
  private timerAt = Number.POSITIVE_INFINITY;
  /** Lines logged since the last send began. */
  private sinceSend = 0;
  private sending: Promise<void> | undefined;
  private failures = 0;
  /** When to try many attempts a call again, after a scheduler said it has no such call. */
  private manyAgainAt = 0;
  private retryAt = 0;
  /** The last line's time, as a number and as sent: lines logged in one millisecond share it. */
  private stampMs = Number.NaN;
  private stamp = '';

  constructor(
    /** `logsMany` (one call for many attempts) when the scheduler side has it, else `logs`. */
    private readonly callbacks: Required<Pick<WorkerCallbacks, 'logs'>> &
      Pick<WorkerCallbacks, 'logsMany'>,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** The log of one attempt (its lines numbered on from where an earlier one left off). */
  open(taskId: string, attempt: number, fence: number): RunLog {
    const key = `${taskId}/${attempt}`;
    const p = this.pending.get(key) ?? {
      taskId,
      attempt,
      fence,
      next: 0,
      lines: [],
      dropped: 0,
    };
    p.fence = Math.max(p.fence, fence);
    this.pending.set(key, p);
    const line =
      (level: Level) =>
      (message: string, fields?: Record<string, unknown>): void =>
        this.add(p, level, message, fields);
    return {
      debug: line('debug'),
      info: line('info'),
      warn: line('warn'),
      error: line('error'),
      pipe: (child) => this.pipe(p, child),
    };
  }

  /** A newer fence was accepted for the task: its attempts' next batches carry it. */
  raiseFence(taskId: string, fence: number): void {
    for (const p of this.pending.values())
      if (p.taskId === taskId) p.fence = Math.max(p.fence, fence);
  }

  /**
   * Sends what waits now; resolves when it went (or failed this time). Unless `force`d, not
   * before a retry is due: when the send it waited on failed, the timer set for the retry sends.
   */
  async flush(force = false): Promise<void> {
    while (this.sending) await this.sending;
    if (!force && this.retryAt > this.clock.now()) return;
    this.sending = this.sendAll().finally(() => (this.sending = undefined));
    await this.sending;
  }

  /** Stops the timer; lines still waiting are sent once more (bounded by the caller). */
  async close(): Promise<void> {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    this.retryAt = 0;
    await this.flush(true);
  }

  private add(p: Pending, level: Level, message: string, fields?: Record<string, unknown>): void {
    const text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message;
    if (p.lines.length >= MAX_PENDING) {
      p.lines.shift();
      p.dropped++;
    }
    const now = this.clock.now();
    if (now !== this.stampMs) {
      this.stampMs = now;
      this.stamp = new Date(now).toISOString();
    }
    const line: LogLineDto = {
      seq: p.next++,
      at: this.stamp,
      level,
      message: text,
    };
    if (fields && Object.keys(fields).length > 0) line.fields = fields;
    p.lines.push(line);
    this.sinceSend++;
    this.schedule(p.lines.length >= BATCH || this.sinceSend >= FULL_CALL ? 0 : FLUSH_MS, now);
  }

  private pipe(p: Pending, child: ChildProcess): Promise<void> {
    return followOutput(child, (level, line) => this.add(p, level, line));
  }

  /** A send `ms` from now (not before a retry is due), unless one is set for sooner already. */
  private schedule(ms: number, now = this.clock.now()): void {
    const at = Math.max(now + ms, this.retryAt);
    if (this.timer && this.timerAt <= at) return;
    this.clock.clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Number.POSITIVE_INFINITY;
      void this.flush();
    }, at - now);
    this.timer.unref();
  }

  /**
   * Every attempt's waiting lines: in calls of many attempts each when the client has them,
   * else a few attempts at a time (each attempt's lines in order either way).
   */
  private async sendAll(): Promise<void> {
    this.sinceSend = 0;
    const attempts = [...this.pending.entries()].filter(([, p]) => p.lines.length > 0);
    const many = (): boolean =>
      this.callbacks.logsMany !== undefined && this.clock.now() >= this.manyAgainAt;
    if (many()) await this.sendMany(attempts);
    // Not `else`: a scheduler without the call has the rest sent this way at once.
    if (!many()) {
      let failed = false;
      let next = 0;
      const lane = async (): Promise<void> => {
        while (!failed && next < attempts.length) {
          const [key, p] = attempts[next++];
          if (!(await this.sendAttempt(key, p))) failed = true;
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
    }
    for (const [key, p] of attempts)
      if (p.lines.length === 0 && this.finished.delete(key)) this.pending.delete(key);
  }

  /**
   * Calls of up to ATTEMPT_LOGS_MAX_BATCHES attempts and ATTEMPT_LOGS_MAX_LINES lines, one after
   * the other, until nothing waits or a call fails (then all is sent again later).
   */
  private async sendMany(attempts: [string, Pending][]): Promise<void> {
    const logsMany = this.callbacks.logsMany as NonNullable<WorkerCallbacks['logsMany']>;
    let left = attempts.filter(([, p]) => p.lines.length > 0);
    while (left.length > 0) {
      const call: { key: string; p: Pending; batch: LogLineDto[] }[] = [];
      const room = new CallRoom(ATTEMPT_LOGS_MAX_LINES);
      for (const [key, p] of left) {
        if (call.length >= ATTEMPT_LOGS_MAX_BATCHES || !room.left()) break;
        const batch = this.nextBatch(p, room);
        if (batch.length === 0) break;
        call.push({ key, p, batch });
      }
      const body: AttemptLogBatchDto[] = call.map(({ p, batch }) => ({
        task_id: p.taskId,
        attempt: p.attempt,
        fence: p.fence,
        lines: batch,
      }));
      try {
        const verdicts = await logsMany(body);
        this.failures = 0;
        this.retryAt = 0;
        call.forEach(({ key, p, batch }, i) => {
          // Refused (unknown task, stale attempt or fence): the lines are not the scheduler's.
          if (verdicts[i]?.refused) this.pending.delete(key);
          else p.lines.splice(0, batch.length);
        });
      } catch (err) {
        if (
          err instanceof WorkerCallError &&
          err.httpStatus === 404 &&
          err.code !== ContractErrorCode.TASK_NOT_FOUND
        ) {
          // A scheduler older than the call (a rolling deploy): one call per attempt for a while.
          this.manyAgainAt = this.clock.now() + MANY_RETRY_MS;
          this.logger.warn('the scheduler has no PUT /v1/attempt-logs: sending logs per attempt');
          return;
        }
        if (refusedWhole(err)) {
          // A body this scheduler will never take (its limits are set lower than ours): each
          // attempt on its own, so one attempt's lines cannot hold up the others'.
          for (const { key, p } of call) if (!(await this.sendAttempt(key, p))) return;
          left = left.filter(([key, p]) => p.lines.length > 0 && this.pending.has(key));
          continue;
        }
        this.failed(call[0].p.taskId, err);
        return;
      }
      left = left.filter(([key, p]) => p.lines.length > 0 && this.pending.has(key));
    }
  }

  /** The attempt's next lines to send, as many as `room` takes (the first says how many were dropped). */
  private nextBatch(p: Pending, room: CallRoom): LogLineDto[] {
    if (p.dropped > 0) {
      // Said in the attempt's own log, where the gap is: the worker kept no more.
      p.lines[0] = {
        ...p.lines[0],
        message: `[${p.dropped} earlier line(s) dropped by the worker: the scheduler could not be reached] ${p.lines[0].message}`,
      };
      p.dropped = 0;
    }
    let n = 0;
    while (n < p.lines.length && n < BATCH && room.take(p.lines[n])) n++;
    return p.lines.slice(0, n);
  }

  /** A call that did not go: all is kept, in order, and sent again later, with backoff. */
  private failed(taskId: string, err: unknown): void {
    this.failures++;
    if (this.failures === 1)
      this.logger.warn(`sending logs of ${taskId} failed (${errorMessage(err)}): retrying`);
    this.retryAt =
      this.clock.now() + Math.min(RETRY_MAX_MS, FLUSH_MS * 2 ** Math.min(this.failures, 8));
    // A send set for sooner while this one was under way waits for the retry too.
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.schedule(0);
  }

  /** One attempt's waiting lines, in order; false when the scheduler could not be reached. */
  private async sendAttempt(key: string, p: Pending): Promise<boolean> {
    while (p.lines.length > 0) {
      const batch = this.nextBatch(p, new CallRoom(BATCH));
      try {
        await this.callbacks.logs(p.taskId, p.attempt, p.fence, batch);
        this.failures = 0;
        this.retryAt = 0;
      } catch (err) {
        if (err instanceof StaleFenceError || err instanceof TaskNotFoundError) {
          this.pending.delete(key);
          return true;
        }
        if (refusedWhole(err)) {
          // Sending it again would be refused again: dropped, and said so, not retried forever.
          this.logger.warn(
            `the scheduler refused ${batch.length} log line(s) of ${p.taskId} (${errorMessage(err)}): dropped`,
          );
          p.lines.splice(0, batch.length);
          continue;
        }
        // Kept, in order, and sent again later: a scheduler that restarts gets them then.
        this.failed(p.taskId, err);
        return false;
      }
      p.lines.splice(0, batch.length);
    }
    return true;
  }

  /** The run of this attempt ended: once its lines went, nothing of it is kept. */
  ended(taskId: string, attempt: number): void {
    const key = `${taskId}/${attempt}`;
    const p = this.pending.get(key);
    if (!p) return;
    if (p.lines.length === 0) this.pending.delete(key);
    else this.finished.add(key);
  }
}

/** A 400 or 413 of the whole call: the scheduler will refuse it however often it is sent. */
function refusedWhole(err: unknown): boolean {
  return err instanceof WorkerCallError && (err.httpStatus === 400 || err.httpStatus === 413);
}

/** A child process's output, line by line (stdout as info, stderr as warn), until both end. */
export async function followOutput(
  child: ChildProcess,
  onLine: (level: 'info' | 'warn', line: string) => void,
): Promise<void> {
  const follow = (stream: NodeJS.ReadableStream | null, level: 'info' | 'warn'): Promise<void> =>
    stream
      ? new Promise((resolve) =>
          createInterface({ input: stream, crlfDelay: Infinity })
            .on('line', (l) => onLine(level, l))
            .once('close', () => resolve()),
        )
      : Promise.resolve();
  await Promise.all([follow(child.stdout, 'info'), follow(child.stderr, 'warn')]);
}
