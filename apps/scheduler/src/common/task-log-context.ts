import { attemptIds, attemptTraceId, traceparentIn } from '@baton/task-contract';

/** What every log line about one attempt of a task carries. */
export interface TaskLogFields {
  task_id: string;
  attempt: number;
  /** The attempt's W3C trace id (attemptTraceId): the worker's calls carry it too. */
  trace_id: string;
}

/**
 * The task a line of the engine's log is about, and the trace of its calls to workers. Passed
 * explicitly: a line's first argument is `TaskLog.line(id, attempt, text)` (the logger merges its
 * fields), a call to a worker carries `TaskLog.traceparent(id, attempt)`. Not carried implicitly
 * through AsyncLocalStorage: on Node 20 its promise hooks run for every promise the process makes,
 * and cost the scheduler about 8% of its throughput in `npm run bench`.
 */
export const TaskLog = {
  fields(taskId: string, attempt: number): TaskLogFields {
    return { task_id: taskId, attempt, trace_id: attemptTraceId(taskId, attempt) };
  },

  /** A log line about the attempt: its fields and the text (`msg`). */
  line(taskId: string, attempt: number, msg: string): TaskLogFields & { msg: string } {
    return { ...TaskLog.fields(taskId, attempt), msg };
  },

  /**
   * A traceparent in the attempt's trace, under the attempt's root span (the one AttemptSpans
   * writes when the attempt ends), for the calls made to the worker for it.
   */
  traceparent(taskId: string, attempt: number): string {
    const { traceId, spanId } = attemptIds(taskId, attempt);
    return traceparentIn(traceId, spanId);
  },
};
