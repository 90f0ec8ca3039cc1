import { Clock, systemClock } from '@baton/time';
import {
  BlockingKind,
  ContractErrorCode,
  ContractException,
  RunContext,
  RunOutcome,
  TaskHandler,
  TaskSnapshot,
} from '@baton/task-contract';

const MAX_SECONDS = 3600;

function readParams(params: Readonly<Record<string, unknown>>): {
  seconds: number;
  tickMs: number;
} {
  const seconds = params.seconds ?? 5;
  const tickMs = params.tick_ms ?? 250;
  if (typeof seconds !== 'number' || !(seconds >= 0 && seconds <= MAX_SECONDS)) {
    throw new ContractException(
      ContractErrorCode.VALIDATION_FAILED,
      `params.seconds must be a number in [0, ${MAX_SECONDS}]`,
    );
  }
  if (typeof tickMs !== 'number' || !(tickMs >= 10 && tickMs <= 60_000)) {
    throw new ContractException(
      ContractErrorCode.VALIDATION_FAILED,
      'params.tick_ms must be a number in [10, 60000]',
    );
  }
  return { seconds, tickMs };
}

/**
 * `demo.sleep`: async; sleeps `params.seconds` in ticks of `params.tick_ms`, reporting progress
 * and a heartbeat each tick. Pausable (time spent paused does not count) and cancellable.
 */
export class SleepHandler implements TaskHandler {
  readonly type = 'demo.sleep';
  readonly blocking = BlockingKind.ASYNC;
  readonly pausable = true;
  readonly heartbeatTimeoutMs = 5_000;
  /** What readParams checks, for the scheduler to check first (and a form to offer). */
  readonly paramsSchema = {
    type: 'object',
    properties: {
      seconds: {
        type: 'number',
        minimum: 0,
        maximum: MAX_SECONDS,
        default: 5,
        description: 'how long to sleep',
      },
      tick_ms: {
        type: 'number',
        minimum: 10,
        maximum: 60_000,
        default: 250,
        description: 'how often to report progress and beat',
      },
    },
  };

  /** `clock`: the worker's, which the ticks are slept on. */
  constructor(private readonly clock: Clock = systemClock) {}

  create(task: TaskSnapshot): void {
    readParams(task.params);
  }

  change(_task: TaskSnapshot, params: Record<string, unknown>): Record<string, unknown> {
    readParams(params);
    return params;
  }

  async run(ctx: RunContext): Promise<RunOutcome> {
    const { seconds, tickMs } = readParams(ctx.task.params);
    const totalMs = seconds * 1000;
    let sleptMs = 0;
    let ticks = 0;
    ctx.log.info(`sleeping ${seconds} s in ticks of ${tickMs} ms`, { attempt: ctx.task.attempt });
    while (sleptMs < totalMs) {
      await ctx.checkpoint();
      const step = Math.min(tickMs, totalMs - sleptMs);
      // Ends early when the run is cancelled; the next checkpoint then throws.
      await this.clock.sleep(step, ctx.signal).catch(() => undefined);
      sleptMs += step;
      ticks++;
      if (ctx.signal.aborted)
        ctx.log.warn(`stopped after ${sleptMs} ms: ${String(ctx.signal.reason)}`);
      else ctx.log.info(`tick ${ticks}: slept ${sleptMs} of ${totalMs} ms`);
      await ctx.progress(
        (sleptMs / totalMs) * 100,
        `tick ${ticks}`,
        `slept ${sleptMs} of ${totalMs} ms`,
      );
    }
    await ctx.checkpoint();
    ctx.log.info(`done: slept ${sleptMs} ms in ${ticks} tick(s)`);
    return { result: { slept_ms: sleptMs, ticks } };
  }

  summary(task: TaskSnapshot): string {
    const slept = task.result?.slept_ms;
    return typeof slept === 'number' ? `${task.status}: slept ${slept} ms` : task.status;
  }
}
