import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { Clock, PeriodicLoop } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { DRIVABLE } from '../engine';
import { EnqueueTracker, QueueLanes } from '../queue';
import { RunnerService } from '../runner';
import { TasksRepository } from '../task-store';

/**
 * The Dispatcher: moves tasks that are due in the database (new, postponed, retrying, polling,
 * or whose claim lapsed because a scheduler died) into the queue by priority. Because it reads
 * the database — the source of truth — it is also what rebuilds a queue that lost its data.
 */
@Injectable()
export class DispatcherService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Dispatcher');
  private readonly loop: PeriodicLoop;

  constructor(
    private readonly tasks: TasksRepository,
    private readonly runner: RunnerService,
    private readonly tracker: EnqueueTracker,
    private readonly clock: Clock,
    private readonly lanes: QueueLanes,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {
    this.loop = new PeriodicLoop(this.clock, this.logger, this.config.dispatcher.intervalMs, () =>
      this.dispatchOnce(),
    );
  }

  onApplicationBootstrap(): void {
    this.loop.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.loop.stop();
  }

  /**
   * One pass: enqueue what is due, and what falls due within the lookahead at its due time (the
   * runner wakes for it then, instead of at the next pass). Returns how many entries were pushed.
   */
  async dispatchOnce(): Promise<number> {
    const now = this.clock.now();
    const { batch, lookaheadMs } = this.config.dispatcher;
    const due = await this.tasks.due(now, DRIVABLE, batch, now + lookaheadMs);
    // An entry this process pushed and has not finished with is still in the queue.
    const fresh = due.filter((d) => !this.tracker.isPending(d.taskId));
    if (fresh.length > 0) {
      await this.lanes.enqueue(fresh);
      this.runner.nudge();
    }
    return fresh.length;
  }
}
