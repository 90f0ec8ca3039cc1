import { Module, OnModuleInit } from '@nestjs/common';
import { Metrics } from '../metrics';
import { TaskChangeFeed, TaskStoreModule } from '../task-store';
import { OutcomeCounter } from './outcome-counter';
import { TaskGauges } from './task-gauges';
import { TransitionCounter } from './transition-counter';

/**
 * Metrics of what happens to tasks: ends counted from the durable change feed, moves counted as
 * they commit, and gauges of the stored tasks (by status, the backlog) read from the database.
 */
@Module({
  imports: [TaskStoreModule],
  providers: [OutcomeCounter, TransitionCounter, TaskGauges],
})
export class TaskMetricsModule implements OnModuleInit {
  constructor(
    private readonly feed: TaskChangeFeed,
    private readonly counter: OutcomeCounter,
    private readonly transitions: TransitionCounter,
    private readonly gauges: TaskGauges,
    private readonly metrics: Metrics,
  ) {}

  onModuleInit(): void {
    this.feed.subscribe(this.counter);
    this.feed.attach(this.transitions);
    this.gauges.register(this.metrics);
  }
}
