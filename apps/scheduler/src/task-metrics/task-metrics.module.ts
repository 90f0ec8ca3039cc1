import { Module, OnModuleInit } from '@nestjs/common';
import { TaskChangeFeed, TaskStoreModule } from '../task-store';
import { TransitionCounter } from './transition-counter';

/** Metrics of what happens to tasks, learnt from the task store's durable change feed. */
@Module({ imports: [TaskStoreModule], providers: [TransitionCounter] })
export class TaskMetricsModule implements OnModuleInit {
  constructor(
    private readonly feed: TaskChangeFeed,
    private readonly counter: TransitionCounter,
  ) {}

  onModuleInit(): void {
    this.feed.subscribe(this.counter);
  }
}
