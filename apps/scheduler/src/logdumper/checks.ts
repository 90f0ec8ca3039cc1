import { ContractErrorCode, ContractException } from '@baton/task-contract';

/** A 400 VALIDATION_FAILED with one error: what the LogDumper answers for a bad rule or body. */
export function invalid(message: string): ContractException {
  return new ContractException(ContractErrorCode.VALIDATION_FAILED, message, {
    errors: [message],
  });
}

/** A JSON object (not null, not an array). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
