import { Injectable } from '@nestjs/common';
import { TaskStatus } from '@baton/task-contract';
import { Clock } from '../common';
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
      if (!(await this.isCurrent(t, fence, attempt))) return { verdict: 'stale' };
      if (t.status !== TaskStatus.RUNNING && t.status !== TaskStatus.PAUSE)
        return { verdict: 'already' };
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
