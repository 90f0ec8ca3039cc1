import {
  BlockingKind,
  RunContext,
  RunOutcome,
  TaskHandler,
  TaskSnapshot,
} from '@baton/task-contract';

/**
 * `demo.echo`: sync; the outcome is its params. The smallest possible task, used by benchmarks.
 * `params.log_lines` (0 to 1000): logs that many lines first (what a bench of logs sends).
 */
export class EchoHandler implements TaskHandler {
  readonly type = 'demo.echo';
  readonly blocking = BlockingKind.SYNC;
  /** Any params (they are the result); one of them is read. */
  readonly paramsSchema = {
    type: 'object',
    description: 'anything: the result echoes it',
    properties: {
      log_lines: {
        type: 'integer',
        minimum: 0,
        maximum: 1000,
        default: 0,
        description: 'lines to log before answering',
      },
    },
  };
  readonly resultSchema = {
    type: 'object',
    properties: { echo: { type: 'object', description: 'the params, as given' } },
    required: ['echo'],
  };

  create(_task: TaskSnapshot): void {}

  async run(ctx: RunContext): Promise<RunOutcome> {
    const n = ctx.task.params.log_lines;
    if (typeof n === 'number' && Number.isInteger(n) && n > 0)
      for (let i = 0; i < Math.min(n, 1000); i++)
        ctx.log.info(`echo line ${i + 1} of ${n}`, { line: i + 1 });
    return { result: { echo: ctx.task.params } };
  }

  summary(task: TaskSnapshot): string {
    return `${task.status}: echoed ${Object.keys(task.params).length} field(s)`;
  }
}
