import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock, TaskLog, Timer } from '../common';
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
   * Renews the task's claim while this process drives it: whenever a third of the lease on the
   * row is gone, until stopped, or until the drive has gone on past any bound its calls have (the
   * run's deadline plus a few call timeouts): a drive stuck on a call that never settles lets its
   * claim lapse, and the Checker brings the task back.
   *
   * Counted from the lease the row holds, not from when the drive began: the claim's lease was
   * set before its statement ran, and a statement that waited on a busy database (seconds, under
   * load) hands over a claim with little of its lease left, or none. Renewed at once then, before
   * another instance may take the task while this drive goes on (its steps would all lose their
   * races, and a lock key it took would stay with this instance until the drive ended).
   */
  renewWhileDriving(t: TaskModel, type: TaskTypeModel | undefined): { stop(): Promise<void> } {
    const { claimLeaseMs, callTimeoutMs } = this.config.runner;
    const every = Math.max(50, Math.floor(claimLeaseMs / 3));
    const giveUpAt = this.clock.now() + syncRunTimeoutMs(t, type) + 10 * callTimeoutMs;
    let timer: Timer | undefined;
    let stopped = false;
    const next = (wait: number): void => {
      if (stopped) return;
      timer = this.clock.setTimeout(renew, Math.max(0, Math.min(every, wait)));
    };
    const renew = (): void => {
      if (this.clock.now() > giveUpAt) {
        this.logger.warn(
          TaskLog.line(
            t.taskId,
            t.attempt,
            `task ${t.taskId}: its drive outlasted every bound; the claim may lapse`,
          ),
        );
        return;
      }
      // Whether the drive's own step gave the claim up (it rests), or the shutdown handed it
      // back: nothing to renew, no loss.
      let givenUp = this.steps.isHandedBack(t.taskId);
      let renewedNow = false;
      void this.steps
        .step(
          this.steps.latestOf(t.taskId) ?? t,
          { patch: { leaseUntil: this.clock.now() + claimLeaseMs }, reason: 'lease renewed' },
          this.steps.actor,
          // Checked under the step lock: a step that let the task rest gave the claim up.
          (latest) => {
            givenUp = latest.owner !== this.config.instanceId;
            return !givenUp;
          },
        )
        .then((renewed) => {
          renewedNow = renewed !== undefined;
          if (!givenUp)
            this.metrics.inc('baton_lease_renewals_total', {
              result: renewed ? 'renewed' : 'lost',
            });
        })
        .catch((err: unknown) => {
          this.metrics.inc('baton_lease_renewals_total', { result: 'error' });
          this.logger.warn(
            TaskLog.line(t.taskId, t.attempt, `renewing the claim of ${t.taskId}: ${message(err)}`),
          );
        })
        // One renewal at a time: the next when a third of the new lease is gone, but not sooner
        // than half a third after this one (a database so slow that a renewal takes a third of
        // the lease is not sent one after another); after one that failed (the old lease still
        // on the row), a third of a lease later, not at once.
        .finally(() =>
          next(renewedNow ? Math.max(every / 2, this.untilRenewal(t, claimLeaseMs, every)) : every),
        );
    };
    next(this.untilRenewal(t, claimLeaseMs, every));
    return {
      stop: async () => {
        stopped = true;
        this.clock.clearTimeout(timer);
        // A renewal in flight finishes before the next drive reads the latest row.
        await this.steps.settled(t.taskId);
      },
    };
  }

  /** How long until the lease on the row has only two thirds left (now, when less is left). */
  private untilRenewal(t: TaskModel, claimLeaseMs: number, every: number): number {
    const lease = (this.steps.latestOf(t.taskId) ?? t).leaseUntil;
    if (lease === null) return every;
    const due = lease - (claimLeaseMs - every) - this.clock.now();
    return due > 0 ? due : 0;
  }
}
