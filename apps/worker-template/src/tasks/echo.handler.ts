import {
  BlockingKind,
  RunContext,
  RunOutcome,
  TaskHandler,
  TaskSnapshot,
} from '@baton/task-contract';

/** `demo.echo`: sync; the outcome is its params. The smallest possible task, used by benchmarks. */
export class EchoHandler implements TaskHandler {
  readonly type = 'demo.echo';
  readonly blocking = BlockingKind.SYNC;

  create(_task: TaskSnapshot): void {}

  async run(ctx: RunContext): Promise<RunOutcome> {
    return { result: { echo: ctx.task.params } };
  }

  summary(task: TaskSnapshot): string {
    return `${task.status}: echoed ${Object.keys(task.params).length} field(s)`;
  }
}
