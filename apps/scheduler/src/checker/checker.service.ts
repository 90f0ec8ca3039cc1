import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { Clock, PeriodicLoop } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { OWN_LEASE_WAIT, ResourceLeases, TaskEngine, message } from '../engine';
import { QueueLanes } from '../queue';
import { TaskModel, TasksRepository, holdsLockKeys } from '../task-store';

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
    private readonly engine: TaskEngine,
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

  /**
   * One pass. Its parts do not wait on each other: a queue lane that cannot be read (Redis down or
   * flushed mid-call) must not keep the leases of ended tasks from being let go, nor the other
   * lanes from being checked. A part that failed is logged and tried again next pass.
   */
  async checkOnce(): Promise<string[]> {
    const requeued: string[] = [];
    for (const lane of [this.lanes.main, this.lanes.retry, this.lanes.overflow]) {
      try {
        requeued.push(...(await lane.requeueExpired()));
      } catch (err) {
        this.logger.error(`requeueing a queue lane's lapsed entries failed: ${message(err)}`);
      }
    }
    if (requeued.length)
      this.logger.warn(
        `requeued ${requeued.length} entries whose runner stopped: ${requeued.slice(0, 10).join(', ')}${requeued.length > 10 ? ', ...' : ''}`,
      );
    try {
      await this.releaseEndedLeases();
    } catch (err) {
      this.logger.error(`letting go of the lock leases of ended tasks failed: ${message(err)}`);
    }
    return requeued;
  }

  /**
   * Resource leases are renewed by the instance that took them, for as long as it lives; the task
   * may go on elsewhere. Another instance may finish it (a callback, a poll), or take its claim
   * after this one's lapsed (a stall past the claim lease) and postpone it, or give up its attempt:
   * the task then holds no key by its state, while the lease here would keep the key from every
   * other task, and from the task's own next start on another instance (held by itself), for as
   * long as this process lives. So a lease here is let go when the task's row says it holds no
   * key (ended, waiting to start, a retry that waits), or says a start elsewhere found the key
   * held by this very lease (a state that cannot move to POSTPONE, such as a permanent task
   * between lives, keeps its row holding the key: the rows go on keeping the key from other
   * tasks, and the task's next start takes a lease of its own). Never while a drive of the task
   * is under way here (before or after the read), nor when a start used the lease meanwhile.
   */
  private async releaseEndedLeases(): Promise<void> {
    const held = this.leases.heldTaskIds();
    if (held.length === 0) return;
    const usesBefore = new Map(held.map((id) => [id, this.leases.usesOf(id)]));
    const drivenBefore = new Set(held.filter((id) => this.engine.isDriving(id)));
    const found = new Map((await this.tasks.findByIds(held)).map((t) => [t.taskId, t]));
    for (const id of held) {
      const t = found.get(id);
      if (t && holdsLockKeys(t) && !waitsOnOwnLease(t)) continue;
      if (drivenBefore.has(id) || this.engine.isDriving(id)) continue;
      if (this.leases.usesOf(id) !== usesBefore.get(id)) continue;
      await this.leases.release(id);
    }
  }
}

/** A start on another instance found the task's key held by the task's own lease (here). */
function waitsOnOwnLease(t: TaskModel): boolean {
  return t.waiting?.code === 'lock_key' && t.waiting.why.startsWith(OWN_LEASE_WAIT);
}
