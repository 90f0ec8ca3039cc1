import { Inject, Injectable } from '@nestjs/common';
import { Clock } from '../common';
import { Metrics } from '../metrics';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskModel, TasksRepository } from '../task-store';
import { DRIVABLE, EARLY_CLAIM_MS } from './engine-rules';
import { TaskSteps } from './task-steps';

/** Most tasks claimed in one statement, and claim statements in flight at once. */
const CLAIM_BATCH = 256;
const CLAIM_WRITERS = 2;

interface ClaimRequest {
  taskId: string;
  resolve(t: TaskModel | undefined): void;
  reject(err: unknown): void;
}

/**
 * Takes tasks' claims (owner, lease, a new fence) for this process. The claims asked for together
 * (the drives the runner starts from one queue batch) are taken in one statement.
 */
@Injectable()
export class TaskClaims {
  /** Claims asked for and not yet sent. */
  private queue: ClaimRequest[] = [];
  private inFlight = 0;
  private pumpScheduled = false;

  constructor(
    private readonly tasks: TasksRepository,
    private readonly steps: TaskSteps,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly metrics: Metrics,
  ) {}

  /** The task claimed if it is drivable, due and free; undefined when it is not. */
  claim(taskId: string): Promise<TaskModel | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ taskId, resolve, reject });
      if (this.pumpScheduled) return;
      this.pumpScheduled = true;
      // After the current turn: every drive the runner starts in one loop joins the same claim.
      queueMicrotask(() => {
        this.pumpScheduled = false;
        this.pump();
      });
    });
  }

  private pump(): void {
    while (this.inFlight < CLAIM_WRITERS && this.queue.length > 0) {
      const batch = this.queue.splice(0, CLAIM_BATCH);
      this.inFlight++;
      void this.claimBatch(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async claimBatch(batch: readonly ClaimRequest[]): Promise<void> {
    try {
      const now = this.clock.now();
      const rows = await this.tasks.claimMany(
        batch.map((b) => b.taskId),
        this.config.instanceId,
        now,
        now + this.config.runner.claimLeaseMs,
        DRIVABLE,
        now + EARLY_CLAIM_MS,
      );
      const byId = new Map(rows.map((r) => [r.taskId, r]));
      if (rows.length > 0)
        this.metrics.inc('baton_claims_total', { result: 'claimed' }, rows.length);
      if (rows.length < batch.length)
        this.metrics.inc('baton_claims_total', { result: 'missed' }, batch.length - rows.length);
      for (const b of batch) {
        const claimed = byId.get(b.taskId);
        if (claimed) this.steps.track(claimed);
        b.resolve(claimed);
      }
    } catch (err) {
      for (const b of batch) b.reject(err);
    }
  }
}
