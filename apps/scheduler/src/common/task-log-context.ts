import { AsyncLocalStorage } from 'node:async_hooks';
import { attemptSpanId, attemptTraceId, traceparentIn } from '@baton/task-contract';

/** What every log line written while a task is driven carries. */
export interface TaskLogFields {
  task_id: string;
  attempt: number;
  /** The attempt's W3C trace id (attemptTraceId): the worker's calls carry it too. */
  trace_id: string;
}

const storage = new AsyncLocalStorage<TaskLogFields>();

/**
 * The task a piece of work is about, for its log lines and the trace of its calls to workers: the
 * engine runs each drive of a task inside `run`, and the logger adds the fields to every line
 * written meanwhile; a call to the worker continues the attempt's trace.
 */
export const TaskLogContext = {
  run<T>(taskId: string, attempt: number, work: () => Promise<T>): Promise<T> {
    return storage.run(
      { task_id: taskId, attempt, trace_id: attemptTraceId(taskId, attempt) },
      work,
    );
  },

  /** The drive moved on to another attempt of its task (a new one, or a retry). */
  attempt(attempt: number): void {
    const fields = storage.getStore();
    if (!fields || fields.attempt === attempt) return;
    fields.attempt = attempt;
    fields.trace_id = attemptTraceId(fields.task_id, attempt);
  },

  /** The fields of the task being driven here, if any. */
  fields(): TaskLogFields | undefined {
    return storage.getStore();
  },

  /**
   * A traceparent in the current attempt's trace, under the attempt's root span (the one
   * AttemptSpans writes when the attempt ends); undefined outside a drive.
   */
  traceparent(): string | undefined {
    const fields = storage.getStore();
    return fields
      ? traceparentIn(fields.trace_id, attemptSpanId(fields.task_id, fields.attempt))
      : undefined;
  },
};
