import { TransformationType } from 'class-transformer';
import { defaultMetadataStorage } from 'class-transformer/cjs/storage';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';
import {
  ValidationArguments,
  ValidationTypes,
  IS_ISO8601,
  IS_OPTIONAL,
  MAX_LENGTH,
  ValidatorConstraintInterface,
  getMetadataStorage,
} from 'class-validator';

/**
 * A check of a request body, made from its DTO class: it answers the instance
 * `plainToInstance` + `validateSync({whitelist, forbidNonWhitelisted})` would make of the parsed
 * JSON, or `undefined` when it cannot prove the body valid. `undefined` is not a refusal: the
 * caller then runs the class-validator path, which accepts the body or words the refusal.
 */
export type FastValidator<T> = (body: Record<string, unknown>) => T | undefined;

type Ctor = new () => object;

/** One decorator's check of one property, by the very functions the decorator registered. */
interface Constraint {
  each: boolean;
  validators: ValidatorConstraintInterface[];
  constraints: unknown[];
  validateIf?: (object: object, value: unknown) => boolean;
  /**
   * A cheap sufficient test: a value it passes the validators would pass (each worker's log line
   * carries a timestamp, and the general ISO 8601 check is a long regular expression; its
   * message a length, which the validator counts with two regular expressions).
   */
  surely?: (value: unknown) => boolean;
}

/**
 * A timestamp as `Date#toISOString` writes it (what every worker library sends): a real instant
 * in ISO 8601's extended form from the year 1000 on (the validator refuses year 0), which `@IsISO8601({ strict: true })` passes. Anything else goes to
 * the validator itself.
 */
const CANONICAL_INSTANT = /^[1-9]\d{3}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** The last timestamp found canonical: a worker's batch mostly repeats one. */
let lastCanonical: string | undefined;
export function canonicalInstant(value: unknown): boolean {
  if (lastCanonical !== undefined && value === lastCanonical) return true;
  if (typeof value !== 'string' || !CANONICAL_INSTANT.test(value)) return false;
  // The digits as numbers: a real day of a real month, a time of day (no 24:00, no leap second).
  const n = (at: number): number =>
    (value.charCodeAt(at) - 48) * 10 + value.charCodeAt(at + 1) - 48;
  const year = n(0) * 100 + n(2);
  const month = n(5);
  const day = n(8);
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1])) return false;
  if (n(11) > 23 || n(14) > 59 || n(17) > 59) return false;
  lastCanonical = value;
  return true;
}

/** What the DTO's decorators say of one property. */
interface PropertyPlan {
  name: string;
  /** `@IsOptional()` and `@ValidateIf()`: when one answers false, nothing else is checked. */
  conditions: ((object: object, value: unknown) => boolean)[];
  /** The only condition is `@IsOptional()` (the common case, checked inline). */
  optionalOnly: boolean;
  /** `@IsDefined()` checks, which run even when the value is absent. */
  defined: Constraint[];
  constraints: Constraint[];
  /**
   * `@ValidateNested()` with `@Type(() => Dto)`: the nested class's own plan, for an object or
   * for each item of an array (class-transformer and class-validator both go into arrays).
   */
  nested?: ClassPlan;
  /** `@Transform()` functions (plain to class), in their order. */
  transforms: ((params: {
    value: unknown;
    key: string;
    obj: Record<string, unknown>;
    type: TransformationType;
    options: object;
  }) => unknown)[];
}

interface ClassPlan {
  ctor: Ctor;
  name: string;
  properties: PropertyPlan[];
  /** Each property's plan by its name: the whitelist. */
  byName: ReadonlyMap<string, PropertyPlan>;
}

/** A decorator the compiler does not know how to run exactly as class-validator does. */
export class NotCompilable extends Error {}

/** The class-validator metadata of `ctor`, as `validateSync` reads it (no groups, not always). */
function metadataOf(ctor: Ctor): ValidationMetadata[] {
  return getMetadataStorage().getTargetValidationMetadatas(ctor, '', false, false, undefined);
}

function constraintOf(ctor: Ctor, m: ValidationMetadata): Constraint {
  const metas = getMetadataStorage().getTargetValidatorConstraints(m.constraintCls);
  if (metas.length === 0)
    throw new NotCompilable(`${ctor.name}.${m.propertyName}: no constraint class`);
  for (const meta of metas)
    if (meta.async)
      throw new NotCompilable(`${ctor.name}.${m.propertyName}: ${meta.name} is async`);
  return {
    each: m.each,
    validators: metas.map((meta) => meta.instance),
    constraints: m.constraints,
    validateIf: m.validateIf,
    surely: metas.length === 1 ? shortcut(metas[0].name, m.constraints) : undefined,
  };
}

/**
 * The cheap sufficient test of a check, for the checks every log line meets: a timestamp as
 * toISOString() writes it, and a text no longer in UTF-16 units than the limit (the validator
 * counts a surrogate pair or a variation selector as less, never more).
 */
function shortcut(name: string, constraints: unknown[]): ((value: unknown) => boolean) | undefined {
  if (name === IS_ISO8601) return canonicalInstant;
  const max = constraints?.[0];
  if (name === MAX_LENGTH && typeof max === 'number')
    return (value) => typeof value === 'string' && value.length <= max;
  return undefined;
}

const plans = new Map<Ctor, ClassPlan>();

/** The plan of a DTO class: every property its decorators name, with its checks in order. */
function planOf(ctor: Ctor, seen: Set<Ctor> = new Set()): ClassPlan {
  const known = plans.get(ctor);
  if (known) return known;
  if (seen.has(ctor)) throw new NotCompilable(`${ctor.name} nests itself`);
  seen.add(ctor);
  const metadata = metadataOf(ctor);
  // @Expose/@Exclude change which keys class-transformer copies: not this compiler's to follow.
  if (
    defaultMetadataStorage.getStrategy(ctor) !== 'none' ||
    defaultMetadataStorage.getExposedMetadatas(ctor).length > 0 ||
    defaultMetadataStorage.getExcludedMetadatas(ctor).length > 0
  )
    throw new NotCompilable(`${ctor.name}: @Expose or @Exclude`);
  // class-validator refuses an object of a class without metadata (forbidUnknownValues).
  if (metadata.length === 0) throw new NotCompilable(`${ctor.name} has no validation metadata`);
  const byProperty = new Map<string, ValidationMetadata[]>();
  for (const m of metadata) {
    if (m.groups?.length || m.always)
      throw new NotCompilable(`${ctor.name}.${m.propertyName}: validation groups`);
    const list = byProperty.get(m.propertyName) ?? [];
    list.push(m);
    byProperty.set(m.propertyName, list);
  }
  const properties: PropertyPlan[] = [];
  for (const [name, list] of byProperty) {
    const conditionNames: (string | undefined)[] = [];
    const plan: PropertyPlan = {
      name,
      conditions: [],
      optionalOnly: false,
      defined: [],
      constraints: [],
      transforms: defaultMetadataStorage
        .findTransformMetadatas(ctor, name, TransformationType.PLAIN_TO_CLASS)
        .map((t) => {
          const o = t.options ?? {};
          if (o.groups?.length || o.since !== undefined || o.until !== undefined)
            throw new NotCompilable(`${ctor.name}.${name}: a @Transform with groups or versions`);
          return t.transformFn as PropertyPlan['transforms'][number];
        }),
    };
    for (const m of list) {
      switch (m.type) {
        case ValidationTypes.CONDITIONAL_VALIDATION:
          plan.conditions.push(m.constraints[0] as PropertyPlan['conditions'][number]);
          conditionNames.push(m.name);
          break;
        case ValidationTypes.IS_DEFINED:
          plan.defined.push(constraintOf(ctor, m));
          break;
        case ValidationTypes.CUSTOM_VALIDATION:
          plan.constraints.push(constraintOf(ctor, m));
          break;
        case ValidationTypes.NESTED_VALIDATION: {
          const type = defaultMetadataStorage.findTypeMetadata(ctor, name);
          const nestedCtor = type?.typeFunction() as Ctor | undefined;
          if (!nestedCtor || type?.options?.discriminator)
            throw new NotCompilable(`${ctor.name}.${name}: @ValidateNested without a plain @Type`);
          plan.nested = planOf(nestedCtor, seen);
          break;
        }
        case ValidationTypes.WHITELIST:
          break;
        default:
          throw new NotCompilable(`${ctor.name}.${name}: ${m.type} validation`);
      }
    }
    plan.optionalOnly = conditionNames.length === 1 && conditionNames[0] === IS_OPTIONAL;
    if (defaultMetadataStorage.findTypeMetadata(ctor, name) && !plan.nested)
      throw new NotCompilable(`${ctor.name}.${name}: @Type without @ValidateNested`);
    properties.push(plan);
  }
  const keys = new Set(byProperty.keys());
  // The whitelist reads the instance: a field set by the class itself must be one it validates.
  for (const key of Object.keys(new ctor()))
    if (!keys.has(key)) throw new NotCompilable(`${ctor.name}.${key}: set but not validated`);
  const plan = {
    ctor,
    name: ctor.name,
    properties,
    byName: new Map(properties.map((p) => [p.name, p])),
  };
  plans.set(ctor, plan);
  return plan;
}

/** A plain JSON object (not an array, not null, not an instance of anything). */
export function plainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

/** Keys class-transformer drops or chokes on, or Nest's pipe strips: left to the slow path. */
function riskyKey(key: string): boolean {
  return (
    key === '__proto__' || key === 'constructor' || key === 'prototype' || key in Object.prototype
  );
}

/**
 * Free JSON (params, labels) that class-transformer copies unchanged: no key it would drop or
 * trip over, at any depth (bounded; deeper goes the slow way).
 */
export function plainJson(v: unknown, depth = 0): boolean {
  if (v === null || typeof v !== 'object') return true;
  if (depth > 32) return false;
  if (Array.isArray(v)) {
    for (const item of v) if (!plainJson(item, depth + 1)) return false;
    return true;
  }
  if (Object.getPrototypeOf(v) !== Object.prototype) return false;
  for (const key of Object.keys(v)) {
    if (riskyKey(key) || !plainJson((v as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
}

/** A decorator's verdict as class-validator reaches it: any truthy answer passes. */
function passes(c: Constraint, object: object, value: unknown, args: ValidationArguments): boolean {
  if (c.validateIf && !c.validateIf(object, value)) return true;
  if (c.surely && !c.each && c.surely(value)) return true;
  args.constraints = c.constraints;
  for (const validator of c.validators) {
    if (c.each && Array.isArray(value)) {
      for (const item of value) if (!validator.validate(item, args)) return false;
    } else if (!validator.validate(value, args)) return false;
  }
  return true;
}

/** A nested DTO (or, for an array, each item) built and proven valid, or undefined. */
function buildNested(plan: ClassPlan, value: unknown): unknown {
  if (plainObject(value)) return build(plan, value);
  if (!Array.isArray(value)) return undefined;
  const items = new Array<unknown>(value.length);
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    items[i] = plainObject(item) ? build(plan, item) : undefined;
    if (items[i] === undefined) return undefined;
  }
  return items;
}

/**
 * The instance of `plan` built from `body` as class-transformer builds it, then checked as
 * class-validator checks it; undefined when any check fails or the body is beyond this path.
 */
function build(plan: ClassPlan, body: Record<string, unknown>): object | undefined {
  const out = new plan.ctor() as Record<string, unknown>;
  // class-transformer, key by key of the body: nested classes built, free JSON copied, then
  // @Transform. A key no decorator names is refused by the slow path (forbidNonWhitelisted).
  for (const key of Object.keys(body)) {
    const p = plan.byName.get(key);
    if (!p) return undefined;
    let value = body[key];
    if (value !== undefined && value !== null) {
      if (p.nested) {
        value = buildNested(p.nested, value);
        if (value === undefined) return undefined;
      } else if (typeof value === 'object') {
        if (!plainJson(value)) return undefined;
        if (Array.isArray(value)) value = [...(value as unknown[])];
      }
    }
    if (p.transforms.length > 0)
      for (const transform of p.transforms)
        value = transform({
          value,
          key,
          obj: body,
          type: TransformationType.PLAIN_TO_CLASS,
          options: {},
        });
    out[key] = value;
  }
  // class-validator, property by property in its order: conditions (@IsOptional), @IsDefined,
  // the other checks, then a nested object (absent passes; null or a scalar does not).
  const args: ValidationArguments = {
    targetName: plan.name,
    object: out,
    property: '',
    value: undefined,
    constraints: [],
  };
  for (const p of plan.properties) {
    const value = out[p.name];
    // @IsOptional's own condition, without the call: the value is neither null nor undefined.
    if (p.optionalOnly) {
      if (value === undefined || value === null) continue;
    } else {
      let skipped = false;
      for (const condition of p.conditions) if (!condition(out, value)) skipped = true;
      if (skipped) continue;
    }
    args.property = p.name;
    args.value = value;
    for (const c of p.defined) if (!passes(c, out, value, args)) return undefined;
    for (const c of p.constraints) if (!passes(c, out, value, args)) return undefined;
    if (p.nested && value !== undefined && (value === null || typeof value !== 'object'))
      return undefined;
  }
  return out;
}

/**
 * The fast check of a DTO class, made from its decorators (class-validator's checks, run by the
 * functions they registered, and class-transformer's `@Type` and `@Transform`), so a field added
 * to the DTO is checked here the same way, with nothing to copy. Throws NotCompilable for a
 * decorator it cannot run exactly as class-validator does (a condition, a group, an async check):
 * the DTOs of the hot calls are compiled at start, so that shows at once.
 */
export function compileFastValidator<T extends object>(ctor: new () => T): FastValidator<T> {
  const plan = planOf(ctor);
  return (body) => build(plan, body) as T | undefined;
}
