import { Injectable } from '@nestjs/common';
import { TaskStatus } from '@baton/task-contract';
import { EntityManager } from 'typeorm';
import { TransactionRunner } from '../database';
import { Metrics } from '../metrics';
import { NewTaskStatusChange, TaskChangeWriter } from '../task-store';

/**
 * Counts the status moves this instance commits (`baton_task_transitions_total`) and times them:
 * due → the worker accepting the first attempt (`baton_task_start_delay_seconds`) and start →
 * FINISH (`baton_task_run_duration_seconds`). Told of each write by the change feed, it counts
 * only once the transaction committed: a write that rolled back, or ran again after a deadlock,
 * counts once or not at all. Writes nothing.
 */
@Injectable()
export class TransitionCounter implements TaskChangeWriter {
  readonly name = 'task-transitions';

  constructor(
    private readonly tx: TransactionRunner,
    private readonly metrics: Metrics,
  ) {}

  write(m: EntityManager, changes: readonly NewTaskStatusChange[]): Promise<boolean> {
    this.tx.afterCommit(m, () => {
      for (const c of changes) this.count(c);
    });
    return Promise.resolve(false);
  }

  private count(c: NewTaskStatusChange): void {
    const task_type = c.taskType;
    this.metrics.inc('baton_task_transitions_total', { task_type, from: c.from ?? '', to: c.to });
    const t = c.task;
    if (
      c.to === TaskStatus.CREATE &&
      (c.from === TaskStatus.INIT || c.from === TaskStatus.POSTPONE) &&
      t.attempt === 1
    ) {
      const due = t.startTime ?? t.createdAt;
      this.metrics.observe(
        'baton_task_start_delay_seconds',
        { task_type },
        Math.max(0, c.at - due) / 1000,
      );
    }
    if (c.to === TaskStatus.FINISH && t.startedAt !== null)
      this.metrics.observe(
        'baton_task_run_duration_seconds',
        { task_type, outcome: c.outcome ?? 'unknown' },
        Math.max(0, c.at - t.startedAt) / 1000,
      );
  }
}
