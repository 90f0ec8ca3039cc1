import { plainToInstance } from 'class-transformer';
import { ValidationError, validateSync } from 'class-validator';
import { ContractErrorCode, ContractException } from '../errors/contract.exception';
import { FAST_VALIDATORS } from '../dto/fast-validators';
import { nullsRefused } from './null-policy';

type Ctor<T> = new () => T;

/** Flattens nested class-validator errors to `path: message` lines. */
export function describeValidationErrors(errors: ValidationError[], prefix = ''): string[] {
  const lines: string[] = [];
  for (const error of errors) {
    const path = prefix ? `${prefix}.${error.property}` : error.property;
    for (const message of Object.values(error.constraints ?? {})) {
      lines.push(
        message.startsWith(error.property)
          ? `${path}${message.slice(error.property.length)}`
          : `${path}: ${message}`,
      );
    }
    lines.push(...describeValidationErrors(error.children ?? [], path));
  }
  return lines;
}

/**
 * Turns untrusted JSON into a DTO instance, with the same rules as the apps' global pipe: unknown
 * fields are refused, `null` is refused where the DTO does not document the field as nullable
 * (class-validator's `@IsOptional()` would take it as absent), types are converted only where
 * declared. Throws VALIDATION_FAILED (400) with every problem listed in `data.errors`.
 */
export function validateDto<T extends object>(cls: Ctor<T>, body: unknown): T {
  if (body === undefined || body === null) body = {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new ContractException(ContractErrorCode.MALFORMED_BODY, 'body must be a JSON object');
  }
  const nulls = nullsRefused(cls, body);
  if (nulls.length > 0)
    throw new ContractException(ContractErrorCode.VALIDATION_FAILED, nulls.join('; '), {
      errors: nulls,
    });
  // The contract's hot bodies: a precompiled check proves most of them valid without reflection.
  const fast = FAST_VALIDATORS.get(cls);
  const proven = fast?.(body as Record<string, unknown>);
  if (proven) return proven as T;
  const instance = plainToInstance(cls, body);
  const errors = validateSync(instance, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length > 0) {
    const lines = describeValidationErrors(errors);
    throw new ContractException(ContractErrorCode.VALIDATION_FAILED, lines.join('; '), {
      errors: lines,
    });
  }
  return instance;
}
