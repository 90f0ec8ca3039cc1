import { Transform } from 'class-transformer';

/**
 * A query-string integer written in decimal digits only (`Number()` would also take `0x10`,
 * `1e2` or ` 5 `): anything else is left as it came, for `@IsInt()` to refuse.
 */
export const DecimalInt = (): PropertyDecorator =>
  Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^[0-9]{1,9}$/.test(value) ? Number(value) : value,
  );
