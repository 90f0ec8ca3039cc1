import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { Clock, systemClock } from '@baton/time';
import {
  BlockingKind,
  RunContext,
  RunOutcome,
  TaskHandler,
  TaskSnapshot,
} from '@baton/task-contract';

/**
 * `demo.rollback`: sync; run writes a file named after the task (the visible change), rollback
 * deletes it (and appends a line to `rollbacks.jsonl` in the same folder). `params.fail: true` makes run fail after writing, as a half-done change would.
 */
export class RollbackHandler implements TaskHandler {
  readonly type = 'demo.rollback';
  readonly blocking = BlockingKind.SYNC;
  readonly paramsSchema = {
    type: 'object',
    properties: {
      fail: {
        type: 'boolean',
        default: false,
        description: 'fail after writing, as a half-done change would',
      },
    },
  };

  constructor(
    private readonly dir: string,
    /** The worker's clock: when a rollback happened, in `rollbacks.jsonl`. */
    private readonly clock: Clock = systemClock,
  ) {
    mkdirSync(dir, { recursive: true });
  }

  /** Where the change of a task lands; tests look there. */
  fileOf(taskId: string): string {
    return join(this.dir, `${taskId}.json`);
  }

  create(_task: TaskSnapshot): void {}

  async run(ctx: RunContext): Promise<RunOutcome> {
    const file = this.fileOf(ctx.task.taskId);
    writeFileSync(file, JSON.stringify({ task_id: ctx.task.taskId, params: ctx.task.params }));
    if (ctx.task.params.fail === true) throw new Error('failed after writing (params.fail)');
    return { result: { file } };
  }

  /** Undoes the change, and says so in `rollbacks.jsonl` beside the changes (tests read the order). */
  rollback(task: TaskSnapshot): void {
    rmSync(this.fileOf(task.taskId), { force: true });
    appendFileSync(
      join(this.dir, 'rollbacks.jsonl'),
      `${JSON.stringify({ task_id: task.taskId, at: this.clock.now() })}\n`,
    );
  }

  summary(task: TaskSnapshot): string {
    const file = this.fileOf(task.taskId);
    return existsSync(file)
      ? `${task.status}: wrote ${readFileSync(file).length} bytes`
      : `${task.status}: no change present`;
  }
}
