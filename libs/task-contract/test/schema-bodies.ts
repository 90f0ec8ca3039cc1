import { expect } from '@jest/globals';
import { plainToInstance } from 'class-transformer';
import { defaultMetadataStorage } from 'class-transformer/cjs/storage';
import { ValidationTypes, getMetadataStorage, validateSync } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';
import type { FastValidator } from '../src/dto/compile-fast-validator';

type Ctor = new () => object;

/** A request body made from a DTO's schema, and what was changed to make it. */
export interface SchemaBody {
  what: string;
  body: Record<string, unknown>;
}

const ABSENT = Symbol('absent');

/** Values any field is tried with: each JSON type, empty and not. */
const ANY_JSON: unknown[] = [null, true, 0, 1, -1, 1.5, '', 'x', [], ['x'], [1], {}, { a: 1 }];

const text = (n: number): string => 'a'.repeat(Math.max(0, n));

/** The values a decorator's own limits make interesting: each limit, and one past it. */
function edges(m: ValidationMetadata, seed: unknown): unknown[] {
  const [c0] = m.constraints ?? [];
  const item = Array.isArray(seed) && seed.length > 0 ? seed[0] : 'x';
  switch (m.name) {
    case 'min':
    case 'max':
      return [c0 - 1, c0, c0 + 1, c0 + 0.5];
    case 'minLength':
    case 'maxLength':
      return [text(c0 - 1), text(c0), text(c0 + 1)];
    case 'arrayMinSize':
    case 'arrayMaxSize':
      return [c0 - 1, c0, c0 + 1].filter((n) => n >= 0).map((n) => new Array(n).fill(item));
    case 'isIn':
      return [...(c0 as unknown[]), 'none-of-these'];
    case 'isEnum': {
      const values = Object.values(c0 as object) as unknown[];
      return [...values, 'none-of-these', String(values[0]).toLowerCase()];
    }
    case 'matches':
      return typeof seed === 'string'
        ? [seed, `${seed} `, `${seed}!`, seed.toUpperCase(), text(65), text(201), '-', '0']
        : ['0', '-', text(65)];
    case 'isUrl':
      return ['http://h', 'https://example.com:8080/p?q=1', 'ftp://h', 'example.com', 'http://'];
    case 'isDateString':
      return ['2026-11-27T10:00:00Z', '2026-11-27', '2026-13-40T00:00:00Z', 'yesterday'];
    default:
      return [];
  }
}

function setAt(
  body: Record<string, unknown>,
  path: (string | number)[],
  value: unknown,
): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(body)) as Record<string, unknown>;
  let at: Record<string | number, unknown> = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
  const last = path[path.length - 1];
  if (value === ABSENT) delete at[last];
  else at[last] = value;
  return copy;
}

/**
 * Bodies for a DTO made from its decorators: the seed (a valid body), then, at every field of it
 * and of its nested DTOs (the first item of a list of them), the field left out, set to each JSON
 * type, and set to each value the field's own decorators make interesting (each limit and one
 * past it, each allowed value and one not); plus an unknown field at every level.
 */
export function schemaBodies(ctor: Ctor, seed: Record<string, unknown>): SchemaBody[] {
  const out: SchemaBody[] = [{ what: 'the seed', body: seed }];
  const walk = (cls: Ctor, at: Record<string, unknown>, path: (string | number)[]): void => {
    const where = (key: string | number): string => [...path, key].join('.');
    out.push({ what: `${where('unknown_field')} added`, body: setAt(seed, [...path, 'x_y'], 1) });
    const byProperty = new Map<string, ValidationMetadata[]>();
    for (const m of getMetadataStorage().getTargetValidationMetadatas(cls, '', false, false))
      byProperty.set(m.propertyName, [...(byProperty.get(m.propertyName) ?? []), m]);
    for (const [name, list] of byProperty) {
      const current = at[name];
      const values = [ABSENT, ...ANY_JSON];
      for (const m of list) {
        const found = edges(m, current);
        values.push(...found);
        // A check of each item: the values again, as the items of a list.
        if (m.each) values.push(...[...found, ...ANY_JSON].map((v) => [v]));
      }
      for (const value of values)
        out.push({
          what: `${where(name)} = ${value === ABSENT ? '(absent)' : JSON.stringify(value)?.slice(0, 40)}`,
          body: setAt(seed, [...path, name], value),
        });
      if (list.some((m) => m.type === ValidationTypes.NESTED_VALIDATION)) {
        const nested = defaultMetadataStorage.findTypeMetadata(cls, name)?.typeFunction() as Ctor;
        if (Array.isArray(current) && current.length > 0)
          walk(nested, current[0] as Record<string, unknown>, [...path, name, 0]);
        else if (current && typeof current === 'object')
          walk(nested, current as Record<string, unknown>, [...path, name]);
      }
    }
  };
  walk(ctor, seed, []);
  return out;
}

/** The class-validator path alone: plainToInstance, then validateSync as the pipes run it. */
export function slowPath<T extends object>(cls: new () => T, body: unknown): T | undefined {
  let instance: T;
  try {
    instance = plainToInstance(cls, body);
  } catch {
    return undefined;
  }
  const errors = validateSync(instance, { whitelist: true, forbidNonWhitelisted: true });
  return errors.length === 0 ? instance : undefined;
}

/**
 * Every body of `schemaBodies` where the fast check and the class-validator path disagree (one
 * accepts, the other refuses, or they build different instances), named by what was changed.
 */
export function disagreements<T extends object>(
  cls: new () => T,
  fast: FastValidator<T>,
  bodies: SchemaBody[],
): string[] {
  const out: string[] = [];
  for (const { what, body } of bodies) {
    const slow = slowPath(cls, body);
    const quick = fast(body);
    if (!slow !== !quick)
      out.push(`${what}: ${slow ? 'only class-validator accepts' : 'only the fast check accepts'}`);
    else if (slow && quick) {
      if (quick.constructor !== cls) out.push(`${what}: the fast check made no ${cls.name}`);
      try {
        expect(quick).toStrictEqual(slow);
      } catch {
        out.push(`${what}: the instances differ`);
      }
    }
  }
  return out;
}
