import { ContractErrorCode } from './contract.exception';
import { socketErrorCode } from '../client/socket-error';

/**
 * Errors a `WorkerClient` call ends with. One class per signal, so the scheduler can decide by
 * `instanceof` (retry on unavailable/timeout, stop on stale fence, re-create on not found ...).
 */
export class WorkerCallError extends Error {
  constructor(
    message: string,
    /** The envelope code the worker answered, or the client-side code. */
    readonly code: ContractErrorCode,
    /** HTTP status of the answer; 0 when there was none. */
    readonly httpStatus: number,
    /** The envelope's data, if any. */
    readonly data: unknown = null,
    /** `cause`: what the call failed on when no answer came (the socket or timeout error). */
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** 400: the request broke the schema. A bug in the caller; retrying will not help. */
export class WorkerValidationError extends WorkerCallError {}
/** 401: the worker refused our credentials. */
export class WorkerAuthError extends WorkerCallError {}
/** 404 TASK_TYPE_NOT_FOUND: the worker has no handler for the type. */
export class TaskTypeNotFoundError extends WorkerCallError {}
/** 404 TASK_NOT_FOUND: the worker does not know the task (treat as NONE). */
export class TaskNotFoundError extends WorkerCallError {}
/** 409 ILLEGAL_TRANSITION: the worker's state does not allow the call. */
export class IllegalTransitionError extends WorkerCallError {}
/** 409 STALE_FENCE: someone with a newer lock already spoke to the worker; stop acting. */
export class StaleFenceError extends WorkerCallError {}
/** 409 CREATE_CONFLICT: the task_id exists with another type. */
export class CreateConflictError extends WorkerCallError {}
/** 501: the worker does not implement this optional call. */
export class NotImplementedError extends WorkerCallError {}
/** 429: back off. */
export class WorkerRateLimitedError extends WorkerCallError {}
/** Connection refused/reset, or a 5xx answer: the call may be retried elsewhere. */
export class WorkerUnavailableError extends WorkerCallError {}
/** No answer within the call's timeout. The call may or may not have taken effect. */
export class WorkerTimeoutError extends WorkerCallError {}
/** The answer was not a valid envelope: a worker that does not speak the contract. */
export class WorkerProtocolError extends WorkerCallError {}

type WorkerCallErrorClass = new (
  message: string,
  code: ContractErrorCode,
  httpStatus: number,
  data?: unknown,
) => WorkerCallError;

/** Which error class a worker's envelope code becomes. */
export const ERROR_CLASS_BY_CODE = {
  [ContractErrorCode.OK]: WorkerProtocolError,
  [ContractErrorCode.VALIDATION_FAILED]: WorkerValidationError,
  [ContractErrorCode.MALFORMED_BODY]: WorkerValidationError,
  [ContractErrorCode.MISSING_FENCE]: WorkerValidationError,
  [ContractErrorCode.BAD_URL]: WorkerValidationError,
  [ContractErrorCode.MALFORMED_REQUEST]: WorkerValidationError,
  [ContractErrorCode.UNAUTHENTICATED]: WorkerAuthError,
  [ContractErrorCode.BAD_SIGNATURE]: WorkerAuthError,
  [ContractErrorCode.SIGNATURE_EXPIRED]: WorkerAuthError,
  [ContractErrorCode.SIGNATURE_REPLAYED]: WorkerAuthError,
  [ContractErrorCode.FORBIDDEN]: WorkerAuthError,
  [ContractErrorCode.TASK_TYPE_NOT_FOUND]: TaskTypeNotFoundError,
  [ContractErrorCode.TASK_NOT_FOUND]: TaskNotFoundError,
  [ContractErrorCode.NOT_FOUND]: WorkerProtocolError,
  [ContractErrorCode.ILLEGAL_TRANSITION]: IllegalTransitionError,
  [ContractErrorCode.REQUEST_TIMEOUT]: WorkerUnavailableError,
  [ContractErrorCode.STALE_FENCE]: StaleFenceError,
  [ContractErrorCode.CREATE_CONFLICT]: CreateConflictError,
  [ContractErrorCode.IDEMPOTENCY_IN_FLIGHT]: WorkerProtocolError,
  [ContractErrorCode.VERSION_CONFLICT]: WorkerProtocolError,
  [ContractErrorCode.CONTRACT_VERSION_UNSUPPORTED]: WorkerProtocolError,
  [ContractErrorCode.PAYLOAD_TOO_LARGE]: WorkerValidationError,
  [ContractErrorCode.URI_TOO_LONG]: WorkerValidationError,
  [ContractErrorCode.UNSUPPORTED_MEDIA_TYPE]: WorkerValidationError,
  [ContractErrorCode.IDEMPOTENCY_MISMATCH]: WorkerProtocolError,
  [ContractErrorCode.RATE_LIMITED]: WorkerRateLimitedError,
  [ContractErrorCode.HEADERS_TOO_LARGE]: WorkerValidationError,
  [ContractErrorCode.INTERNAL]: WorkerUnavailableError,
  [ContractErrorCode.NOT_IMPLEMENTED]: NotImplementedError,
  [ContractErrorCode.WORKER_UNAVAILABLE]: WorkerUnavailableError,
  [ContractErrorCode.NOT_READY]: WorkerUnavailableError,
  [ContractErrorCode.OVERLOADED]: WorkerUnavailableError,
  [ContractErrorCode.WORKER_TIMEOUT]: WorkerTimeoutError,
} as const satisfies Record<ContractErrorCode, WorkerCallErrorClass>;

/** Socket errors raised before a request went out: the worker cannot have acted on it. */
const UNSENT_SOCKET_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * True when a failed call provably never reached the worker's handler: the connection was refused
 * or never made, or the worker answered that it is not ready or rate limited. Such a call may be
 * sent elsewhere without wondering whether it took effect. A timeout or a reset after sending is
 * ambiguous and gives false.
 */
export function neverReachedWorker(err: unknown): boolean {
  if (!(err instanceof WorkerCallError)) return false;
  if (
    err instanceof WorkerRateLimitedError ||
    err.code === ContractErrorCode.NOT_READY ||
    err.code === ContractErrorCode.OVERLOADED
  )
    return true;
  if (!(err instanceof WorkerUnavailableError) || err.httpStatus !== 0) return false;
  const code = socketErrorCode(err.cause);
  return code !== undefined && UNSENT_SOCKET_CODES.has(code);
}
