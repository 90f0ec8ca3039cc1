import { ArgumentMetadata, ValidationPipe, ValidationPipeOptions } from '@nestjs/common';
import { FastValidator, plainObject } from '@baton/task-contract';

/**
 * The global ValidationPipe, with precompiled checks in front for the bodies of hot endpoints.
 * A check that proves a body valid answers its instance; anything else (including every refusal)
 * goes through class-validator as before. Configure it with the ValidationPipe's own options:
 * the checks must mean the same (whitelist, forbidNonWhitelisted, transform).
 */
export class FastValidationPipe extends ValidationPipe {
  constructor(
    options: ValidationPipeOptions,
    private readonly fast: ReadonlyMap<unknown, FastValidator<object>>,
  ) {
    super(options);
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const check = metadata.type === 'body' ? this.fast.get(metadata.metatype) : undefined;
    if (check && plainObject(value)) {
      const proven = check(value);
      if (proven) return proven;
    }
    return super.transform(value, metadata);
  }
}
