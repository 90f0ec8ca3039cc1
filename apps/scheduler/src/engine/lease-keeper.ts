import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock, TaskLog } from '../common';
import { Metrics } from '../metrics';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskModel } from '../task-store';
import { TaskTypeModel } from '../task-types';
import { message, syncRunTimeoutMs } from './engine-rules';
import { TaskSteps } from './task-steps';

/** Keeps the claim of a task alive while this process drives it. */
@Injectable()
export class LeaseKeeper {
  private readonly logger = new Logger('TaskEngine');

  constructor(
    private readonly steps: TaskSteps,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly metrics: Metrics,
  ) {}

  /**
   * Renews the task's claim every third of its lease until stopped, or until the drive has gone
   * on past any bound its calls have (the run's deadline plus a few call timeouts): a drive stuck
   * on a call that never settles lets its claim lapse, and the Checker brings the task back.
   */
  renewWhileDriving(t: TaskModel, type: TaskTypeModel | undefined): { stop(): Promise<void> } {
    const { claimLeaseMs, callTimeoutMs } = this.config.runner;
    const every = Math.max(50, Math.floor(claimLeaseMs / 3));
    const giveUpAt = this.clock.now() + syncRunTimeoutMs(t, type) + 10 * callTimeoutMs;
    const timer = this.clock.setInterval(() => {
      if (this.clock.now() > giveUpAt) {
        this.clock.clearInterval(timer);
        this.logger.warn(
          TaskLog.line(
            t.taskId,
            t.attempt,
            `task ${t.taskId}: its drive outlasted every bound; the claim may lapse`,
          ),
        );
        return;
      }
      void this.steps
        .step(
          this.steps.latestOf(t.taskId) ?? t,
          { patch: { leaseUntil: this.clock.now() + claimLeaseMs }, reason: 'lease renewed' },
          this.steps.actor,
          // Checked under the step lock: a step that let the task rest gave the claim up.
          (latest) => latest.owner === this.config.instanceId,
        )
        .then((renewed) =>
          this.metrics.inc('baton_lease_renewals_total', { result: renewed ? 'renewed' : 'lost' }),
        )
        .catch((err: unknown) => {
          this.metrics.inc('baton_lease_renewals_total', { result: 'error' });
          this.logger.warn(
            TaskLog.line(t.taskId, t.attempt, `renewing the claim of ${t.taskId}: ${message(err)}`),
          );
        });
    }, every);
    return {
      stop: async () => {
        this.clock.clearInterval(timer);
        // A renewal in flight finishes before the next drive reads the latest row.
        await this.steps.settled(t.taskId);
      },
    };
  }
}
