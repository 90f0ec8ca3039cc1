import { ContractErrorCode, ContractException } from '@baton/task-contract';

/**
 * An `Idempotency-Key` header as sent (undefined: none), checked: 1 to `max` printable ASCII
 * characters without spaces, else 400. One rule for every route that takes the header.
 */
export function idempotencyKeyOf(raw: string | undefined, max = 200): string | undefined {
  if (raw === undefined) return undefined;
  if (raw.length < 1 || raw.length > max || !/^[\x21-\x7e]+$/.test(raw))
    throw new ContractException(
      ContractErrorCode.VALIDATION_FAILED,
      `Idempotency-Key must be 1-${max} printable ASCII characters`,
    );
  return raw;
}
