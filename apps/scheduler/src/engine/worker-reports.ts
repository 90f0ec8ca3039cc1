import { Injectable } from '@nestjs/common';
import { TaskStatus } from '@baton/task-contract';
import { Clock } from '../common';
import { Metrics } from '../metrics';
import { TaskLogRepository, TaskModel, TasksRepository } from '../task-store';
import { outcomeChange } from './engine-rules';

/**
 * What async workers report on their own (the scheduler's callback endpoints): an outcome, a
 * heartbeat, progress. A report counts only for the task's current attempt, under a fence that
 * attempt was driven with.
 */
@Injectable()
export class WorkerReports {
  constructor(
    private readonly tasks: TasksRepository,
    private readonly log: TaskLogRepository,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
  ) {}

  /**
   * An async worker reported the outcome (the scheduler's notify endpoint). Refused with a
   * StaleFence-style false when the fence or attempt is not the current one.
   */
  async completeFromWorker(
    taskId: string,
    fence: number,
    attempt: number,
    outcome: TaskStatus.SUCCESS | TaskStatus.FAIL,
    result: Record<string, unknown> | null,
    error: { message: string; code?: string | null } | null,
  ): Promise<{ verdict: 'accepted' | 'stale' | 'unknown' | 'already'; task?: TaskModel }> {
    for (let tries = 0; tries < 5; tries++) {
      const t = await this.tasks.findById(taskId);
      if (!t) return { verdict: 'unknown' };
      if (!(await this.isCurrent(t, fence, attempt))) {
        await this.conflict(t, fence, attempt, outcome);
        return { verdict: 'stale' };
      }
      if (t.status !== TaskStatus.RUNNING && t.status !== TaskStatus.PAUSE) {
        await this.conflict(t, fence, attempt, outcome);
        return { verdict: 'already' };
      }
      const next = await this.tasks.apply(
        t,
        {
          ...outcomeChange(t, outcome, result, error, 'worker reported', this.clock.now()),
          actor: `worker:${t.workerId ?? 'unknown'}`,
        },
        this.clock.now(),
      );
      if (next) return { verdict: 'accepted', task: next };
    }
    return { verdict: 'stale' };
  }

  /** Heartbeat or progress from a worker; false when the fence/attempt is stale. */
  async beatFromWorker(
    taskId: string,
    fence: number,
    attempt: number,
    progress?: TaskModel['progress'],
  ): Promise<'accepted' | 'stale' | 'unknown'> {
    const t = await this.tasks.findById(taskId);
    if (!t) return 'unknown';
    if (!(await this.isCurrent(t, fence, attempt))) return 'stale';
    // Not a transition: no version bump, so a beat never knocks the engine's own step off. The
    // row must still be at this attempt and running (else the attempt ended meanwhile: stale).
    const recorded = await this.tasks.recordBeat(taskId, attempt, this.clock.now(), progress);
    return recorded ? 'accepted' : 'stale';
  }

  /**
   * A SUCCESS reported for an attempt this scheduler recorded FAIL (its answer was lost, it came
   * after a timeout, the worker finished a run it was told to drop): the record stays as it is
   * (a later attempt may be under way), but it is never dropped silently. An event on the task
   * says it, and `baton_outcome_conflicts_total` counts it.
   */
  private async conflict(
    t: TaskModel,
    fence: number,
    attempt: number,
    outcome: TaskStatus,
  ): Promise<void> {
    if (outcome !== TaskStatus.SUCCESS) return;
    const recorded = (await this.log.attempts(t.taskId)).find((a) => a.attempt === attempt);
    // Only the worker that had the attempt: a fence from before the attempt is not its report.
    if (!recorded || recorded.outcome !== TaskStatus.FAIL || fence < recorded.fence) return;
    this.metrics.inc('baton_outcome_conflicts_total', { task_type: t.taskType });
    await this.tasks.note(
      t.taskId,
      `outcome conflict: worker ${recorded.workerId ?? '?'} reported SUCCESS for attempt ${attempt}, recorded FAIL (${recorded.error ?? 'no error'}); the record stands`,
      `worker:${recorded.workerId ?? 'unknown'}`,
      attempt,
      this.clock.now(),
    );
  }

  /**
   * A worker's report is current when it is about the task's current attempt and carries a fence
   * that attempt was driven with: not older than the attempt's creation, not newer than the task's.
   * (Every claim takes a new fence, so the worker's own may trail the task's by a few polls.)
   */
  private async isCurrent(t: TaskModel, fence: number, attempt: number): Promise<boolean> {
    if (attempt !== t.attempt || fence > t.fence) return false;
    const since = await this.log.attemptFence(t.taskId, attempt);
    return since !== undefined && fence >= since;
  }
}
