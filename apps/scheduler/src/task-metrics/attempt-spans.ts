import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { attemptIds, TaskStatus, tracing } from '@baton/task-contract';
import { EntityManager } from 'typeorm';
import { TransactionRunner } from '../database';
import { NewTaskStatusChange, TaskChangeWriter } from '../task-store';

/** Statuses an attempt can be left from when a new attempt of its task begins. */
const ENDED = new Set<string>([
  TaskStatus.SUCCESS,
  TaskStatus.FAIL,
  TaskStatus.ROLLBACK,
  TaskStatus.NONE,
  TaskStatus.RUNNING,
  TaskStatus.PREPARE,
]);

/**
 * The root span of each task attempt, sent to OpenTelemetry when tracing is on (`startTracing`,
 * OTEL_EXPORTER_OTLP_ENDPOINT): one trace per attempt (`attemptTraceId`), whose root
 * (`attemptSpanId`) every call to the worker for that attempt named as its parent, so the
 * scheduler's client spans and the worker's server spans hang under it. Written once the move
 * that ended the attempt committed, by the instance that made it: the move to FINISH, or the move
 * that began the next attempt. From its start (`started_at`, else the task's creation) to that
 * move. Writes nothing to the database; not attached while tracing is off.
 */
@Injectable()
export class AttemptSpans implements TaskChangeWriter, OnApplicationShutdown {
  readonly name = 'attempt-spans';

  constructor(private readonly tx: TransactionRunner) {}

  write(m: EntityManager, changes: readonly NewTaskStatusChange[]): Promise<boolean> {
    const ended = changes.filter(
      (c) =>
        c.to === TaskStatus.FINISH ||
        (c.task.attempt > 1 &&
          (c.to === TaskStatus.CREATE || c.to === TaskStatus.INIT) &&
          c.from !== null &&
          ENDED.has(c.from)),
    );
    if (ended.length > 0) this.tx.afterCommit(m, () => ended.forEach((c) => this.record(c)));
    return Promise.resolve(false);
  }

  private record(c: NewTaskStatusChange): void {
    const t = c.task;
    const attempt = c.to === TaskStatus.FINISH ? t.attempt : t.attempt - 1;
    const failed = c.to === TaskStatus.FINISH ? c.outcome !== TaskStatus.SUCCESS : true;
    tracing().record(
      `task ${c.taskType}`,
      attemptIds(c.taskId, attempt),
      Math.min(t.startedAt ?? t.createdAt, c.at),
      c.at,
      {
        'baton.task_id': c.taskId,
        'baton.task_type': c.taskType,
        'baton.tenant': c.tenant,
        'baton.attempt': attempt,
        'baton.outcome':
          c.to === TaskStatus.FINISH ? (c.outcome ?? undefined) : (c.from ?? undefined),
      },
      failed
        ? (t.error?.message ?? `attempt ${attempt} ended ${c.outcome ?? c.from ?? ''}`)
        : undefined,
    );
  }

  /** The spans still buffered are sent before the process exits. */
  async onApplicationShutdown(): Promise<void> {
    await tracing()
      .flush()
      .catch(() => undefined);
  }
}
