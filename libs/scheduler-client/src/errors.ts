/**
 * What a call to the scheduler ends with when it does not succeed: the envelope's `code`, `message`
 * and `data`, the HTTP status (0 when no answer came) and the URL that gave the last answer. One
 * class per kind, so callers decide by `instanceof`.
 */
export class BatonApiError extends Error {
  constructor(
    message: string,
    /** The envelope's code (HTTP status × 100 + n), or 0 when no envelope came. */
    readonly code: number,
    readonly httpStatus: number,
    readonly data: unknown = null,
    /** The scheduler that answered last (or was tried last). */
    readonly url: string | null = null,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** 400: the request broke the schema; fix it, retrying will not help. */
export class BatonValidationError extends BatonApiError {}
/** 401 or 403: no credentials, wrong ones, or a role that may not do this. */
export class BatonAuthError extends BatonApiError {}
/** 404: no such task, type, timer (or one of another tenant). */
export class BatonNotFoundError extends BatonApiError {}
/** 409: the task's state does not allow it, or an idempotency key is still in flight. */
export class BatonConflictError extends BatonApiError {}
/** 422: the idempotency key was used with another body. */
export class BatonIdempotencyMismatchError extends BatonApiError {}
/** 429: over a rate limit, after every retry the client was allowed. */
export class BatonRateLimitedError extends BatonApiError {}
/**
 * No scheduler could answer within the client's tries: each was refused, timed out, or answered
 * 502/503/504. `cause` is the last failure.
 */
export class BatonUnavailableError extends BatonApiError {}
/** The answer was not a `{code, message, data}` envelope (not a Baton scheduler, or a proxy's page). */
export class BatonProtocolError extends BatonApiError {}

/** The error class for an answered call, by HTTP status. */
export function errorClassFor(httpStatus: number): typeof BatonApiError {
  if (httpStatus === 400 || httpStatus === 413 || httpStatus === 415) return BatonValidationError;
  if (httpStatus === 401 || httpStatus === 403) return BatonAuthError;
  if (httpStatus === 404) return BatonNotFoundError;
  if (httpStatus === 409) return BatonConflictError;
  if (httpStatus === 422) return BatonIdempotencyMismatchError;
  if (httpStatus === 429) return BatonRateLimitedError;
  if (httpStatus >= 500) return BatonUnavailableError;
  return BatonApiError;
}
