/**
 * The documented error-code table of the contract. A code is the HTTP status times 100 plus a
 * detail number, so `Math.floor(code / 100)` is always the status it travels with.
 */
export enum ContractErrorCode {
  OK = 0,
  VALIDATION_FAILED = 40000,
  MALFORMED_BODY = 40001,
  MISSING_FENCE = 40002,
  BAD_URL = 40003,
  MALFORMED_REQUEST = 40004,
  UNAUTHENTICATED = 40100,
  BAD_SIGNATURE = 40101,
  SIGNATURE_EXPIRED = 40102,
  SIGNATURE_REPLAYED = 40103,
  FORBIDDEN = 40300,
  TASK_TYPE_NOT_FOUND = 40400,
  TASK_NOT_FOUND = 40401,
  NOT_FOUND = 40402,
  ILLEGAL_TRANSITION = 40900,
  STALE_FENCE = 40901,
  CREATE_CONFLICT = 40902,
  IDEMPOTENCY_IN_FLIGHT = 40903,
  REQUEST_TIMEOUT = 40800,
  VERSION_CONFLICT = 40904,
  CONTRACT_VERSION_UNSUPPORTED = 40905,
  PAYLOAD_TOO_LARGE = 41300,
  URI_TOO_LONG = 41400,
  UNSUPPORTED_MEDIA_TYPE = 41500,
  IDEMPOTENCY_MISMATCH = 42200,
  RATE_LIMITED = 42900,
  HEADERS_TOO_LARGE = 43100,
  INTERNAL = 50000,
  NOT_IMPLEMENTED = 50100,
  WORKER_UNAVAILABLE = 50300,
  NOT_READY = 50301,
  OVERLOADED = 50302,
  WORKER_TIMEOUT = 50400,
}

/** One line per code: what it means. Rendered into the OpenAPI documents. */
export const CONTRACT_ERROR_TABLE = {
  [ContractErrorCode.OK]: 'success',
  [ContractErrorCode.VALIDATION_FAILED]:
    'a field is missing, unknown, of the wrong type or out of range',
  [ContractErrorCode.MALFORMED_BODY]:
    'the body is not valid JSON or not an object, not UTF-8, has a lone surrogate, or is nested too deep or too wide',
  [ContractErrorCode.MISSING_FENCE]: 'a changing call came without a valid X-Baton-Fence header',
  [ContractErrorCode.BAD_URL]: 'the URL is not valid: bad percent-encoding or UTF-8',
  [ContractErrorCode.MALFORMED_REQUEST]:
    'the HTTP request itself is malformed (its request line, headers or framing); the connection is closed',
  [ContractErrorCode.UNAUTHENTICATED]: 'no or wrong credentials',
  [ContractErrorCode.BAD_SIGNATURE]: 'the HMAC signature does not match the request',
  [ContractErrorCode.SIGNATURE_EXPIRED]: 'the signed timestamp is outside the replay window',
  [ContractErrorCode.SIGNATURE_REPLAYED]: 'this signature was already used',
  [ContractErrorCode.FORBIDDEN]:
    "scheduler: the API key's role (or tenant) does not allow this call",
  [ContractErrorCode.TASK_TYPE_NOT_FOUND]: 'the worker has no handler for this task type',
  [ContractErrorCode.TASK_NOT_FOUND]: 'the worker (or scheduler) does not know this task_id',
  [ContractErrorCode.NOT_FOUND]:
    'no such resource (worker, task type, timer, ...) on the scheduler',
  [ContractErrorCode.ILLEGAL_TRANSITION]: 'the transition table does not allow this call now',
  [ContractErrorCode.STALE_FENCE]: 'a higher fence was already seen for this task',
  [ContractErrorCode.CREATE_CONFLICT]: 'the task_id exists with a different task_type',
  [ContractErrorCode.IDEMPOTENCY_IN_FLIGHT]:
    'scheduler: a request with this Idempotency-Key is still being processed; retry later',
  [ContractErrorCode.VERSION_CONFLICT]:
    'scheduler: the task changed while the call was being applied; read it again and retry',
  [ContractErrorCode.CONTRACT_VERSION_UNSUPPORTED]:
    'scheduler: the registering worker speaks a worker contract older than this scheduler accepts (BATON_MIN_WORKER_CONTRACT)',
  [ContractErrorCode.PAYLOAD_TOO_LARGE]: 'the body is larger than the limit',
  [ContractErrorCode.URI_TOO_LONG]: 'a path parameter is longer than the limit',
  [ContractErrorCode.UNSUPPORTED_MEDIA_TYPE]: 'the body is not application/json',
  [ContractErrorCode.IDEMPOTENCY_MISMATCH]:
    'scheduler: this Idempotency-Key was used with a different request body',
  [ContractErrorCode.RATE_LIMITED]: 'too many calls; retry later',
  [ContractErrorCode.HEADERS_TOO_LARGE]:
    "the request's headers are larger than the server takes (Node's --max-http-header-size, 16 KiB by default); the connection is closed",
  [ContractErrorCode.REQUEST_TIMEOUT]:
    'the request was not received whole in time; the connection is closed',
  [ContractErrorCode.INTERNAL]: 'unexpected error; the message carries an error id for the logs',
  [ContractErrorCode.NOT_IMPLEMENTED]: 'the worker does not implement this optional call',
  [ContractErrorCode.WORKER_UNAVAILABLE]: 'the worker could not be reached (client side)',
  [ContractErrorCode.NOT_READY]:
    'scheduler: a backend it needs (database, queue, locks) cannot be reached, or migrations are pending',
  [ContractErrorCode.OVERLOADED]:
    'scheduler: too busy to take the request now (nothing was done); retry after Retry-After, on another instance if there is one',
  [ContractErrorCode.WORKER_TIMEOUT]: 'the worker did not answer in time (client side)',
} as const satisfies Record<ContractErrorCode, string>;

/** The HTTP status a code travels with. */
export function httpStatusOf(code: ContractErrorCode): number {
  return code === ContractErrorCode.OK ? 200 : Math.floor(code / 100);
}

/**
 * A broken rule of the contract. Libraries throw this (never an HTTP exception); the apps'
 * exception filters map `code` to the HTTP status and the `{code, message, data}` envelope.
 */
export class ContractException extends Error {
  constructor(
    readonly code: ContractErrorCode,
    message: string,
    readonly data: unknown = null,
  ) {
    super(message);
    this.name = 'ContractException';
  }

  get httpStatus(): number {
    return httpStatusOf(this.code);
  }
}
