import { Injectable } from '@nestjs/common';
import { Metrics } from '../metrics';
import { NewTaskStatusChange, TaskChangeConsumer, TaskStatusChange } from '../task-store';

/**
 * Counts task status moves by type (`baton_task_transitions_total{type,from,to}`; `from` is empty
 * for a task's first status), from the durable change feed: a move committed just before a
 * crash is counted by the instance that relays it next.
 */
@Injectable()
export class TransitionCounter implements TaskChangeConsumer {
  readonly name = 'task-metrics';

  constructor(private readonly metrics: Metrics) {}

  wants(_change: NewTaskStatusChange): boolean {
    return true;
  }

  async handle(changes: readonly TaskStatusChange[]): Promise<void> {
    for (const c of changes)
      this.metrics.inc('baton_task_transitions_total', {
        type: c.taskType,
        from: c.from ?? '',
        to: c.to,
      });
  }
}
