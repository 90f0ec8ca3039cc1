import { ArgumentMetadata, ValidationPipe, ValidationPipeOptions } from '@nestjs/common';
import {
  ContractErrorCode,
  ContractException,
  FastValidator,
  plainObject,
} from '@baton/task-contract';
import { isDocumentedDto, nullsRefused } from '@baton/task-contract';

/**
 * The global ValidationPipe, with precompiled checks in front for the bodies of hot endpoints.
 * A check that proves a body valid answers its instance; anything else (including every refusal)
 * goes through class-validator as before. Configure it with the ValidationPipe's own options:
 * the checks must mean the same (whitelist, forbidNonWhitelisted, transform).
 *
 * In front of both: a body must be a JSON object, and `null` is refused wherever the DTO does not
 * document the field as nullable (libs/task-contract/src/util/null-policy.ts), except in the DTOs of `nullTolerant` (the
 * worker-facing calls, whose tolerance the worker contract sets).
 */
export class FastValidationPipe extends ValidationPipe {
  constructor(
    options: ValidationPipeOptions,
    private readonly fast: ReadonlyMap<unknown, FastValidator<object>>,
    private readonly nullTolerant: ReadonlySet<unknown> = new Set(),
  ) {
    super(options);
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'body' && !this.nullTolerant.has(metadata.metatype))
      this.refuseNulls(value, metadata.metatype);
    const check = metadata.type === 'body' ? this.fast.get(metadata.metatype) : undefined;
    if (check && plainObject(value)) {
      const proven = check(value);
      if (proven) return proven;
    }
    return super.transform(value, metadata);
  }

  private refuseNulls(value: unknown, metatype: unknown): void {
    if (value === undefined || !isDocumentedDto(metatype)) return;
    // A DTO with documented fields takes an object, never `null`, a list or a scalar.
    if (!plainObject(value))
      throw new ContractException(
        ContractErrorCode.MALFORMED_BODY,
        'the body must be a JSON object',
      );
    const lines = nullsRefused(metatype, value);
    if (lines.length > 0)
      throw new ContractException(ContractErrorCode.VALIDATION_FAILED, lines.join('; '), {
        errors: lines,
      });
  }
}
