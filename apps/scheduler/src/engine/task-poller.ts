import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  CallOptions,
  NotifyEvent,
  StaleFenceError,
  TaskNotFoundError,
  TaskStatus,
  WorkerClient,
  WorkerTimeoutError,
  WorkerUnavailableError,
} from '@baton/task-contract';
import { Clock, TaskLog } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskModel, TaskPatch } from '../task-store';
import { TaskTypeModel, TaskTypesService } from '../task-types';
import { WorkersService } from '../workers';
import { AttemptRunner } from './attempt-runner';
import { WORKER_CLIENT } from './engine.tokens';
import {
  REST,
  Step,
  createsAndRuns,
  deadlineSeconds,
  message,
  outcomeChange,
} from './engine-rules';
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

  /** A RUNNING async task is due: ask the worker how it is. */
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
    // A sync run has a bound even without a deadline: the same one its run call is given.
    const deadlineS = deadlineSeconds(t, type);
    if (deadlineS !== null && t.startedAt !== null && now - t.startedAt > deadlineS * 1000) {
      await this.client
        .notify(url, t.taskType, t.taskId, { event: NotifyEvent.DEADLINE }, opts)
        .catch(() => undefined);
      return this.policy.timeout(
        t,
        type,
        type.timeoutPolicy.deadline,
        `ran past its deadline of ${deadlineS} s`,
        'deadline_timeout',
      );
    }
    try {
      const [task] = await this.client.query(url, t.taskType, { task_id: t.taskId }, opts);
      // Created and run in one call that never reached the worker (the scheduler died first).
      if (!task && createsAndRuns(type)) return this.resumeRun(t, type, true);
      if (!task) return this.adoption.workerLostTask(t, 'the worker does not know the task');
      if (task.attempt !== t.attempt)
        return this.adoption.workerLostTask(
          t,
          `the worker has attempt ${task.attempt}, not ${t.attempt}`,
        );
      if (task.task_status === TaskStatus.CREATE || task.task_status === TaskStatus.PREPARE) {
        // RUNNING here but the run call never reached the worker (the scheduler that sent it died
        // between its RUNNING write and the call): the attempt has not started there, so run it.
        return this.resumeRun(t, type);
      }
      if (task.task_status === TaskStatus.SUCCESS || task.task_status === TaskStatus.FAIL) {
        // Under our claim, driven on from the row the step returns; the outcome is the worker's.
        const next = await this.steps.step(
          t,
          outcomeChange(
            t,
            task.task_status,
            task.result,
            task.error,
            'worker reported',
            this.clock.now(),
          ),
          `worker:${t.workerId ?? 'unknown'}`,
        );
        return next ?? REST;
      }
      const hb = await this.client.heartbeat(url, t.taskType, t.taskId, opts);
      // The worker holds the attempt as RUNNING, but the run died with an earlier process of it
      // (a crash or restart): nothing will report an outcome. Recovered now, not after the
      // heartbeat timeout; a run that is only late to beat (alive false, not lost) waits for it.
      if (
        hb.execution_lost === true &&
        !hb.alive &&
        hb.task_status === TaskStatus.RUNNING &&
        task.task_status === TaskStatus.RUNNING
      ) {
        return this.policy.recover(
          t,
          type,
          `worker ${t.workerId ?? '?'} holds attempt ${t.attempt} as RUNNING but its execution was lost (the worker restarted)`,
        );
      }
      const patch: TaskPatch = {
        dueAt: now + this.config.checker.pollIntervalMs,
        owner: null,
        leaseUntil: null,
      };
      if (hb.alive) patch.heartbeatAt = now;
      if (task.progress)
        patch.progress = {
          percent: task.progress.percent,
          step: task.progress.step,
          message: task.progress.message,
        };
      const lastBeat = hb.alive ? now : (t.heartbeatAt ?? t.startedAt ?? now);
      if (
        !hb.alive &&
        task.task_status === TaskStatus.RUNNING &&
        now - lastBeat > type.heartbeatTimeoutMs
      ) {
        return this.policy.timeout(
          t,
          type,
          type.timeoutPolicy.heartbeat,
          `no heartbeat for ${now - lastBeat} ms`,
          'heartbeat_timeout',
        );
      }
      await this.steps.step(t, { patch, reason: 'polled' });
      return REST;
    } catch (err) {
      if (err instanceof StaleFenceError) return REST;
      if (err instanceof TaskNotFoundError)
        return this.adoption.workerLostTask(t, 'the worker does not know the task');
      if (err instanceof WorkerUnavailableError || err instanceof WorkerTimeoutError) {
        if (t.workerId) await this.workers.reportFailure(t.workerId);
        const lastBeat = t.heartbeatAt ?? t.startedAt ?? now;
        if (now - lastBeat > type.heartbeatTimeoutMs) {
          return this.policy.timeout(
            t,
            type,
            type.timeoutPolicy.heartbeat,
            `worker unreachable and no heartbeat for ${now - lastBeat} ms: ${message(err)}`,
            'heartbeat_timeout',
          );
        }
        await this.steps.step(t, {
          patch: { dueAt: now + this.config.checker.pollIntervalMs, owner: null, leaseUntil: null },
          reason: 'poll failed',
        });
        return REST;
      }
      throw err;
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
