/** Why a queue operation failed; callers branch on the code, never on the message. */
export enum QueueErrorCode {
  /** The configured driver name is not one of the known drivers. */
  UNKNOWN_DRIVER = 'UNKNOWN_DRIVER',
  /** The configuration has a missing or bad value (shards, prefix, connection settings). */
  INVALID_CONFIG = 'INVALID_CONFIG',
  /** An entry is malformed: empty taskId, priority outside 0–9, a due time that is not a number. */
  INVALID_ENTRY = 'INVALID_ENTRY',
  /** The queue server could not be reached or answered with an error. */
  BACKEND_UNAVAILABLE = 'BACKEND_UNAVAILABLE',
  /** The driver was closed. */
  CLOSED = 'CLOSED',
}

/**
 * The one error class of the queue module. It is not an HTTP exception: the queue sits below
 * the services, and the app's exception filter maps codes to HTTP where that is ever needed.
 */
export class QueueException extends Error {
  constructor(
    readonly code: QueueErrorCode,
    message: string,
    readonly data?: Record<string, unknown>,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'QueueException';
  }

  /** True when `error` is a QueueException with the given code. */
  static is(error: unknown, code: QueueErrorCode): error is QueueException {
    return error instanceof QueueException && error.code === code;
  }
}
