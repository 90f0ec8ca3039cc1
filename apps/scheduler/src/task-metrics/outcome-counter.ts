import { Injectable } from '@nestjs/common';
import { TaskStatus } from '@baton/task-contract';
import { Metrics } from '../metrics';
import { NewTaskStatusChange, TaskChangeConsumer, TaskStatusChange } from '../task-store';

/**
 * Counts tasks that ended, by type and outcome (`baton_tasks_finished_total{task_type,outcome}`), from
 * the durable change feed: a task that finished just before a crash is counted by the instance
 * that relays the change next, so over all instances no ended task goes uncounted.
 */
@Injectable()
export class OutcomeCounter implements TaskChangeConsumer {
  readonly name = 'task-metrics';

  constructor(private readonly metrics: Metrics) {}

  wants(change: NewTaskStatusChange): boolean {
    return change.to === TaskStatus.FINISH;
  }

  async handle(changes: readonly TaskStatusChange[]): Promise<void> {
    for (const c of changes)
      this.metrics.inc('baton_tasks_finished_total', {
        task_type: c.taskType,
        outcome: c.outcome ?? 'unknown',
      });
  }
}
