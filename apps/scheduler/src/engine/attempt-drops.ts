import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import {
  IllegalTransitionError,
  NotifyEvent,
  StaleFenceError,
  TaskNotFoundError,
  TaskTypeNotFoundError,
  WorkerClient,
} from '@baton/task-contract';
import { Clock, PeriodicLoop, TaskLog } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { AttemptDrop, AttemptDropsRepository } from '../task-store';
import { WorkersService } from '../workers';
import { WORKER_CLIENT } from './engine.tokens';
import { message } from './engine-rules';

/** Drops sent per pass, and at once. */
const DROP_BATCH = 64;
const DROP_PARALLEL = 8;
/** A claimed drop is due again after this if its sender died. */
const DROP_CLAIM_MS = 30_000;
/** Longest wait between two tries. */
const DROP_BACKOFF_MAX_MS = 60_000;
/** A drop call gives up on a slow worker after this (it is tried again). */
const DROP_CALL_TIMEOUT_MS = 5_000;

/**
 * Tells workers to drop attempts the scheduler gave up (a call that never reached the worker or
 * timed out, a task moved to another worker): a cancel notify with the attempt's own fence, so a
 * worker that has since taken a newer attempt refuses it as stale and keeps the newer one. Each
 * owed drop is a row, marked in the transaction that ended its attempt, and is retried with
 * backoff until the worker answers, is no longer registered at that URL, or `dropGiveUpMs` passed.
 */
@Injectable()
export class AttemptDrops implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('AttemptDrops');
  private readonly loop: PeriodicLoop;

  constructor(
    private readonly drops: AttemptDropsRepository,
    private readonly workers: WorkersService,
    @Inject(WORKER_CLIENT) private readonly client: WorkerClient,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {
    this.loop = new PeriodicLoop(this.clock, this.logger, config.checker.intervalMs, () =>
      this.sendDue(),
    );
  }

  onApplicationBootstrap(): void {
    this.loop.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.loop.stop();
  }

  /** One pass: every drop due now, a few at a time. Resolves with how many were settled. */
  async sendDue(): Promise<number> {
    const now = this.clock.now();
    const due = await this.drops.due(now, DROP_BATCH);
    let settled = 0;
    for (let i = 0; i < due.length; i += DROP_PARALLEL) {
      const results = await Promise.all(due.slice(i, i + DROP_PARALLEL).map((d) => this.send(d)));
      settled += results.filter(Boolean).length;
    }
    return settled;
  }

  private async send(d: AttemptDrop): Promise<boolean> {
    if (!(await this.drops.claim(d, this.clock.now() + DROP_CLAIM_MS))) return false;
    const what = `attempt ${d.attempt} of task ${d.taskId} on ${d.workerUrl}`;
    try {
      await this.client.notify(
        d.workerUrl,
        d.taskType,
        d.taskId,
        {
          event: NotifyEvent.CANCEL,
          message: `attempt ${d.attempt} was given up by the scheduler`,
        },
        {
          fence: d.fence,
          requestId: `${d.taskId}/${d.attempt}/drop`,
          traceparent: TaskLog.traceparent(d.taskId, d.attempt),
          timeoutMs: Math.min(this.config.runner.callTimeoutMs, DROP_CALL_TIMEOUT_MS),
        },
      );
      this.logger.log(`dropped ${what}`);
    } catch (err) {
      if (!(await this.settledDespite(d, err))) {
        const wait = Math.min(DROP_BACKOFF_MAX_MS, 1000 * 2 ** Math.min(d.tries, 16));
        this.logger.warn(`could not drop ${what} (${message(err)}); again in ${wait} ms`);
        await this.drops.later(d, this.clock.now() + wait);
        return false;
      }
    }
    await this.drops.done(d, this.clock.now());
    return true;
  }

  /** True when the worker cannot be holding the attempt any more, or will never be reached. */
  private async settledDespite(d: AttemptDrop, err: unknown): Promise<boolean> {
    const what = `attempt ${d.attempt} of task ${d.taskId} on ${d.workerUrl}`;
    // A newer fence there (a newer attempt), no such task, no such type, nothing left to stop.
    if (
      err instanceof StaleFenceError ||
      err instanceof TaskNotFoundError ||
      err instanceof TaskTypeNotFoundError ||
      err instanceof IllegalTransitionError
    )
      return true;
    if (!(await this.workers.isRegisteredUrl(d.taskType, d.workerUrl))) {
      this.logger.warn(`${what} not dropped: no worker is registered there any more`);
      return true;
    }
    if (this.clock.now() - d.endedAt > this.config.workers.dropGiveUpMs) {
      this.logger.error(
        `${what} not dropped after ${d.tries + 1} tries over ${this.config.workers.dropGiveUpMs} ms: giving up (${message(err)})`,
      );
      return true;
    }
    return false;
  }
}
