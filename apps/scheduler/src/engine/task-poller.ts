import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  CallOptions,
  NotifyEvent,
  StaleFenceError,
  TaskNotFoundError,
  WorkerClient,
  WorkerTimeoutError,
  WorkerUnavailableError,
} from '@baton/task-contract';
import { Clock, TaskLog } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskModel } from '../task-store';
import { TaskTypeModel, TaskTypesService } from '../task-types';
import { WorkersService } from '../workers';
import { AttemptRunner } from './attempt-runner';
import { WORKER_CLIENT } from './engine.tokens';
import { REST, Step, createsAndRuns, message, outcomeChange } from './engine-rules';
import { PollPlan, Seen, decidePoll } from './decide';
import { FailurePolicy } from './failure-policy';
import { TaskSteps } from './task-steps';
import { WorkerStateAdoption } from './worker-state-adoption';

/**
 * A RUNNING task that is due: its deadline, then the worker's word on it (status, heartbeat,
 * progress); and the run call sent again when it never reached the worker.
 */
@Injectable()
export class TaskPoller {
  private readonly logger = new Logger('TaskEngine');

  constructor(
    private readonly types: TaskTypesService,
    @Inject(WORKER_CLIENT) private readonly client: WorkerClient,
    private readonly workers: WorkersService,
    private readonly steps: TaskSteps,
    private readonly policy: FailurePolicy,
    private readonly adoption: WorkerStateAdoption,
    private readonly attempts: AttemptRunner,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  /** A RUNNING async task is due: ask the worker how it is (decidePoll says what follows). */
  async poll(t: TaskModel): Promise<Step> {
    const type = await this.types.find(t.taskType);
    if (!type) return this.policy.noType(t);
    const now = this.clock.now();
    const url = t.workerUrl ?? '';
    const opts: CallOptions = {
      fence: t.fence,
      requestId: `${t.taskId}/${t.attempt}/poll`,
      traceparent: TaskLog.traceparent(t.taskId, t.attempt),
    };
    const decide = (seen: Seen): PollPlan =>
      decidePoll(t, type, seen, now, this.config.checker.pollIntervalMs, createsAndRuns(type));
    let plan = decide({ kind: 'before-query' });
    if (plan.kind !== 'ask') return this.carryOut(t, type, plan, url, opts);
    try {
      const [task] = await this.client.query(url, t.taskType, { task_id: t.taskId }, opts);
      plan = decide({ kind: 'query', task });
      if (plan.kind === 'ask' && task) {
        const heartbeat = await this.client.heartbeat(url, t.taskType, t.taskId, opts);
        plan = decide({ kind: 'heartbeat', task, heartbeat });
      }
      if (plan.kind === 'outcome' && task) {
        // Under our claim, driven on from the row the step returns; the outcome is the worker's.
        const next = await this.steps.step(
          t,
          outcomeChange(
            t,
            plan.outcome,
            task.result,
            task.error,
            'worker reported',
            this.clock.now(),
          ),
          `worker:${t.workerId ?? 'unknown'}`,
        );
        return next ?? REST;
      }
      // Not awaited here: what carrying the plan out throws is not a failure of the poll.
      return this.carryOut(t, type, plan, url, opts);
    } catch (err) {
      if (err instanceof StaleFenceError) return REST;
      if (err instanceof TaskNotFoundError)
        return this.adoption.workerLostTask(t, 'the worker does not know the task');
      if (err instanceof WorkerUnavailableError || err instanceof WorkerTimeoutError) {
        if (t.workerId) await this.workers.reportFailure(t.workerId);
        return this.carryOut(
          t,
          type,
          decide({ kind: 'unreachable', error: message(err) }),
          url,
          opts,
        );
      }
      throw err;
    }
  }

  private async carryOut(
    t: TaskModel,
    type: TaskTypeModel,
    plan: PollPlan,
    url: string,
    opts: CallOptions,
  ): Promise<Step> {
    switch (plan.kind) {
      case 'deadline':
        await this.client
          .notify(url, t.taskType, t.taskId, { event: NotifyEvent.DEADLINE }, opts)
          .catch(() => undefined);
        return this.policy.timeout(t, type, plan.timeout);
      case 'heartbeat-timeout':
        return this.policy.timeout(t, type, plan.timeout);
      case 'resume-run':
        return this.resumeRun(t, type, plan.create);
      case 'worker-lost':
        return this.adoption.workerLostTask(t, plan.why);
      case 'recover':
        return this.policy.recover(t, type, plan.why);
      case 'again':
        await this.steps.step(t, plan.change);
        return REST;
      case 'ask':
      case 'outcome':
        // Both are handled where the worker's answers are at hand.
        throw new Error(`poll of ${t.taskId}: ${plan.kind} left undone`);
    }
  }

  /**
   * Sends the run call of the current attempt again, to the worker that has the attempt (with
   * `create`: the create-and-run call, to a worker that never got it).
   */
  private async resumeRun(t: TaskModel, type: TaskTypeModel, create = false): Promise<Step> {
    const worker = t.workerId ? await this.workers.find(t.workerId) : undefined;
    if (!worker || worker.url !== t.workerUrl)
      return this.adoption.workerLostTask(
        t,
        `worker ${t.workerId ?? '?'} of attempt ${t.attempt} is gone`,
      );
    const renewed = await this.steps.step(t, {
      patch: { heartbeatAt: this.clock.now() },
      reason: `the run call of attempt ${t.attempt} never reached ${worker.workerId}; run again`,
    });
    if (!renewed) return REST;
    this.logger.warn(
      TaskLog.line(
        t.taskId,
        t.attempt,
        `task ${t.taskId}: the run call of attempt ${t.attempt} never reached ${worker.workerId}; sending it again`,
      ),
    );
    this.workers.acquireSlot(worker.workerId);
    try {
      return create
        ? await this.attempts.sendCreateAndRun(renewed, type, worker)
        : await this.attempts.runOnWorker(renewed, type, worker);
    } finally {
      this.workers.releaseSlot(worker.workerId);
    }
  }
}
