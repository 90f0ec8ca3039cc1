import { createHash, randomBytes } from 'node:crypto';

/**
 * The W3C trace id of one attempt of a task: the same on every scheduler instance and for every
 * call of the attempt (derived, not stored), so the attempt's calls, the worker's lines and the
 * scheduler's lines share one trace.
 */
export function attemptTraceId(taskId: string, attempt: number): string {
  return createHash('sha256').update(`${taskId}/${attempt}`).digest('hex').slice(0, 32);
}

/**
 * A traceparent header in `traceId` (version 00, sampled) whose parent is `spanId`, or a new span
 * id when none is given.
 */
export function traceparentIn(traceId: string, spanId?: string): string {
  return `00-${traceId}-${spanId ?? randomBytes(8).toString('hex')}-01`;
}

/** The trace id of a traceparent header, undefined when it is not one. */
export function traceIdOf(traceparent: string | string[] | undefined): string | undefined {
  const m =
    typeof traceparent === 'string'
      ? /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/.exec(traceparent)
      : null;
  return m && m[1] !== '0'.repeat(32) ? m[1] : undefined;
}
