import { ValueTransformer } from 'typeorm';

/** mysql2 returns BIGINT as a string; times and fences are epoch-ms / counters that fit a double. */
export const bigintNumber: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | number | null) =>
    value === null || value === undefined ? value : Number(value),
};

/** JSON kept in a TEXT column: portable across SQLite and MySQL. */
export const jsonText: ValueTransformer = {
  to: (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value)),
  from: (value: string | null) =>
    value === null || value === undefined ? null : (JSON.parse(value) as unknown),
};
