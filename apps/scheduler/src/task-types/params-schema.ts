import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/** One way a value breaks its schema: where (a JSON pointer into the body) and what. */
export interface SchemaProblem {
  pointer: string;
  message: string;
}

/** The largest schema a worker may declare for one type (its JSON). */
export const MAX_SCHEMA_BYTES = 64 * 1024;
/** Problems named in one answer at most; the rest are counted. */
export const MAX_PROBLEMS = 20;
/** Distinct schemas kept compiled; past it the cache starts again (workers declare a handful). */
const MAX_COMPILED = 256;

/**
 * JSON Schemas (draft 2020-12) that task types declare for their params and results: compiled
 * once per distinct schema, every problem reported with its JSON pointer. A schema may refer only
 * to itself (`#/$defs/...`): nothing is fetched. Unknown keywords are taken as annotations (an
 * `x-` hint for a form, say), so a schema written for another validator still loads.
 */
export class JsonSchemas {
  private readonly ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor() {
    addFormats(this.ajv);
  }

  /** Why `schema` cannot be a type's schema, or undefined when it can. */
  problemOf(schema: unknown): string | undefined {
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
      return 'must be a JSON Schema object';
    const text = JSON.stringify(schema);
    if (Buffer.byteLength(text) > MAX_SCHEMA_BYTES)
      return `is ${Buffer.byteLength(text)} bytes; at most ${MAX_SCHEMA_BYTES} are kept`;
    try {
      this.validator(text, schema);
      return undefined;
    } catch (err) {
      return `is not a JSON Schema (draft 2020-12): ${(err as Error).message}`;
    }
  }

  /**
   * The problems of `value` against `schema`, each pointer prefixed with `at` (e.g. `/params`).
   * `skip` drops the problems at a pointer (relative to the value) that a placeholder fills later.
   */
  check(
    schema: Record<string, unknown>,
    value: unknown,
    at: string,
    skip?: (pointer: string) => boolean,
  ): SchemaProblem[] {
    const text = JSON.stringify(schema);
    const validate = this.validator(text, schema);
    if (validate(value)) return [];
    return (validate.errors ?? [])
      .map((e) => ({ pointer: pointerOf(e), message: messageOf(e) }))
      .filter((p) => !skip?.(p.pointer))
      .slice(0, MAX_PROBLEMS)
      .map((p) => ({ pointer: `${at}${p.pointer}`, message: p.message }));
  }

  private validator(text: string, schema: object): ValidateFunction {
    let fn = this.compiled.get(text);
    if (!fn) {
      if (this.compiled.size >= MAX_COMPILED) {
        this.ajv.removeSchema();
        this.compiled.clear();
      }
      // A schema's own $id would clash with itself on the next compile of an equal copy.
      const { $id: _id, ...rest } = schema as Record<string, unknown>;
      fn = this.ajv.compile(rest);
      this.compiled.set(text, fn);
    }
    return fn;
  }
}

/** Where the problem is: a missing property is named at its own place, not its parent's. */
function pointerOf(e: ErrorObject): string {
  if (e.keyword === 'required')
    return `${e.instancePath}/${escape(String(e.params.missingProperty))}`;
  if (e.keyword === 'additionalProperties')
    return `${e.instancePath}/${escape(String(e.params.additionalProperty))}`;
  if (e.keyword === 'unevaluatedProperties')
    return `${e.instancePath}/${escape(String(e.params.unevaluatedProperty))}`;
  return e.instancePath;
}

function messageOf(e: ErrorObject): string {
  switch (e.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
    case 'unevaluatedProperties':
      return 'is not a field of this type';
    case 'enum':
      return `must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    default:
      return e.message ?? `fails ${e.keyword}`;
  }
}

/** A JSON pointer segment (RFC 6901). */
function escape(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The problems as one line for a 400's message: the first few, and how many more. */
export function describeProblems(problems: readonly SchemaProblem[]): string {
  const shown = problems.slice(0, 3).map((p) => `${p.pointer || '/'} ${p.message}`);
  const more = problems.length > 3 ? ` (and ${problems.length - 3} more)` : '';
  return `${shown.join('; ')}${more}`;
}
