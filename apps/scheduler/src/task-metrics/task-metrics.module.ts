import { Module, OnModuleInit } from '@nestjs/common';
import { tracing } from '@baton/task-contract';
import { Metrics } from '../metrics';
import { TaskChangeFeed, TaskStoreModule } from '../task-store';
import { AttemptSpans } from './attempt-spans';
import { OutcomeCounter } from './outcome-counter';
import { TaskGauges } from './task-gauges';
import { TransitionCounter } from './transition-counter';

/**
 * Metrics of what happens to tasks: ends counted from the durable change feed, moves counted as
 * they commit, and gauges of the stored tasks (by status, the backlog) read from the database.
 */
@Module({
  imports: [TaskStoreModule],
  providers: [OutcomeCounter, TransitionCounter, TaskGauges, AttemptSpans],
})
export class TaskMetricsModule implements OnModuleInit {
  constructor(
    private readonly feed: TaskChangeFeed,
    private readonly counter: OutcomeCounter,
    private readonly transitions: TransitionCounter,
    private readonly gauges: TaskGauges,
    private readonly spans: AttemptSpans,
    private readonly metrics: Metrics,
  ) {}

  onModuleInit(): void {
    this.feed.subscribe(this.counter);
    this.feed.attach(this.transitions);
    // Nothing to write while tracing is off: not told of any change then.
    if (tracing().enabled) this.feed.attach(this.spans);
    this.gauges.register(this.metrics);
  }
}
