import { Module, OnModuleInit } from '@nestjs/common';
import { TaskChangeFeed, TaskStoreModule } from '../task-store';
import { OutcomeCounter } from './outcome-counter';

/** Metrics of what happens to tasks, learnt from the task store's durable change feed. */
@Module({ imports: [TaskStoreModule], providers: [OutcomeCounter] })
export class TaskMetricsModule implements OnModuleInit {
  constructor(
    private readonly feed: TaskChangeFeed,
    private readonly counter: OutcomeCounter,
  ) {}

  onModuleInit(): void {
    this.feed.subscribe(this.counter);
  }
}
