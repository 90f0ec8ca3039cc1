import { Clock, systemClock } from '@baton/time';
import {
  BlockingKind,
  RunContext,
  RunOutcome,
  TaskHandler,
  TaskSnapshot,
} from '@baton/task-contract';

/**
 * `demo.flaky`: sync; fails its first N attempts (`params.fail_times`, default from the worker's
 * config), then succeeds; `params.delay_ms` makes each run take that long, `params.clean_ms`
 * each clean. Exercises the scheduler's retries, backoff and retry lane, and slow calls.
 */
export class FlakyHandler implements TaskHandler {
  readonly type = 'demo.flaky';
  readonly blocking = BlockingKind.SYNC;
  /** Retries are what this type is for: it fails its first attempts, then succeeds. */
  readonly defaults = { maxRetry: 3, backoffBaseMs: 500, backoffMaxMs: 4000 };
  readonly paramsSchema = {
    type: 'object',
    properties: {
      fail_times: {
        type: 'integer',
        minimum: 0,
        description: "attempts that fail before one succeeds (default: the worker's setting)",
      },
      delay_ms: {
        type: 'number',
        minimum: 0,
        description: 'how long each run takes (at most 60 s)',
      },
      clean_ms: {
        type: 'number',
        minimum: 0,
        description: 'how long each clean takes (at most 60 s)',
      },
    },
  };

  constructor(
    private readonly defaultFailures: number,
    /** The worker's clock: the waits of `delay_ms` and `clean_ms`. */
    private readonly clock: Clock = systemClock,
  ) {}

  create(_task: TaskSnapshot): void {}

  async clean(task: TaskSnapshot): Promise<void> {
    const ms = task.params.clean_ms;
    if (typeof ms === 'number' && ms > 0) await this.clock.sleep(Math.min(ms, 60_000));
  }

  async run(ctx: RunContext): Promise<RunOutcome> {
    const delay = ctx.task.params.delay_ms;
    if (typeof delay === 'number' && delay > 0) {
      // Slow failures and successes, for tests of how retries share the scheduler's slots.
      // Abortable: a cancel or a newer attempt ends the wait at once.
      await this.clock.sleep(Math.min(delay, 60_000), ctx.signal).catch(() => undefined);
      if (ctx.signal.aborted) throw new Error('flaky: stopped while waiting');
    }
    const raw = ctx.task.params.fail_times;
    const failTimes =
      typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 ? raw : this.defaultFailures;
    if (ctx.task.attempt <= failTimes) {
      ctx.log.error(`attempt ${ctx.task.attempt} fails: this type fails its first ${failTimes}`);
      throw new Error(`flaky: attempt ${ctx.task.attempt} fails (fails the first ${failTimes})`);
    }
    ctx.log.info(`attempt ${ctx.task.attempt} succeeds (after ${failTimes} failure(s))`);
    return { result: { succeeded_on_attempt: ctx.task.attempt } };
  }
}
