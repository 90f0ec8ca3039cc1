/** Why a lock operation failed; callers branch on the code, never on the message. */
export enum LockErrorCode {
  /** The key(s) stayed held by someone else for the whole `waitMs`. */
  LOCK_TIMEOUT = 'LOCK_TIMEOUT',
  /** The caller no longer holds the key (it expired or another holder took it). */
  NOT_HOLDER = 'NOT_HOLDER',
  /** The lease was lost before the operation (expired, session gone, connection lost). */
  LEASE_LOST = 'LEASE_LOST',
  /** A resource saw a fence lower than one it already accepted: a stale holder. */
  STALE_FENCE = 'STALE_FENCE',
  /** The configured driver name is not one of the known drivers. */
  UNKNOWN_DRIVER = 'UNKNOWN_DRIVER',
  /** The configuration is missing the chosen driver's settings or has a bad value. */
  INVALID_CONFIG = 'INVALID_CONFIG',
  /** The lock server could not be reached or answered with an error. */
  BACKEND_UNAVAILABLE = 'BACKEND_UNAVAILABLE',
  /** The provider was closed. */
  CLOSED = 'CLOSED',
}

/** The one error class of the locks lib; HTTP mapping happens in the apps' filters. */
export class LockException extends Error {
  constructor(
    readonly code: LockErrorCode,
    message: string,
    readonly data?: Record<string, unknown>,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'LockException';
  }

  /** True when `error` is a LockException with the given code. */
  static is(error: unknown, code: LockErrorCode): error is LockException {
    return error instanceof LockException && error.code === code;
  }
}
