import { createHash, randomBytes } from 'node:crypto';

/**
 * The W3C trace id of one attempt of a task: the same on every scheduler instance and for every
 * call of the attempt (derived, not stored), so the attempt's calls, the worker's lines and the
 * scheduler's lines share one trace.
 */
export function attemptTraceId(taskId: string, attempt: number): string {
  return attemptIds(taskId, attempt).traceId;
}

/**
 * The span id of a task attempt's root span: derived, so every instance names the same one (the
 * next 16 hex digits of the hash whose first 32 are the attempt's trace id, `attemptTraceId`).
 */
export function attemptSpanId(taskId: string, attempt: number): string {
  return attemptIds(taskId, attempt).spanId;
}

/** The trace id and root span id of a task attempt, from one hash. */
export function attemptIds(taskId: string, attempt: number): { traceId: string; spanId: string } {
  const h = createHash('sha256').update(`${taskId}/${attempt}`).digest('hex');
  return { traceId: h.slice(0, 32), spanId: h.slice(32, 48) };
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
