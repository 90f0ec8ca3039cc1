import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { Clock, PeriodicLoop } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskStatus } from '@baton/task-contract';
import { ResourceLeases } from '../engine';
import { QueueLanes } from '../queue';
import { TasksRepository } from '../task-store';

/**
 * The Checker: returns queue entries whose runner died (claim lease lapsed) to the queue, and
 * frees resource leases of tasks that ended on another instance. Polling
 * of RUNNING async tasks and re-driving of tasks whose database claim lapsed both come back through
 * the Dispatcher, since their `due_at` says when to look again.
 */
@Injectable()
export class CheckerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Checker');
  private readonly loop: PeriodicLoop;

  constructor(
    private readonly tasks: TasksRepository,
    private readonly leases: ResourceLeases,
    private readonly lanes: QueueLanes,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {
    this.loop = new PeriodicLoop(this.clock, this.logger, this.config.checker.intervalMs, () =>
      this.checkOnce(),
    );
  }

  onApplicationBootstrap(): void {
    this.loop.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.loop.stop();
  }

  async checkOnce(): Promise<string[]> {
    const requeued = [
      ...(await this.lanes.main.requeueExpired()),
      ...(await this.lanes.retry.requeueExpired()),
      ...(await this.lanes.overflow.requeueExpired()),
    ];
    if (requeued.length)
      this.logger.warn(
        `requeued ${requeued.length} entries whose runner stopped: ${requeued.slice(0, 10).join(', ')}${requeued.length > 10 ? ', ...' : ''}`,
      );
    await this.releaseEndedLeases();
    return requeued;
  }

  /**
   * Resource leases are renewed by the instance that took them; another instance may finish the
   * task (a callback, a poll). Leases of tasks that ended, or retry elsewhere, are let go here.
   */
  private async releaseEndedLeases(): Promise<void> {
    const held = this.leases.heldTaskIds();
    if (held.length === 0) return;
    const found = new Map((await this.tasks.findByIds(held)).map((t) => [t.taskId, t]));
    for (const id of held) {
      const t = found.get(id);
      const ended =
        !t ||
        t.status === TaskStatus.FINISH ||
        (t.status === TaskStatus.FAIL && t.outcome === null);
      if (ended) await this.leases.release(id);
    }
  }
}
