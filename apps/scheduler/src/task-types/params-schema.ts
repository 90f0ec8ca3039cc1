import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import Ajv07 from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types';
import addFormats from 'ajv-formats';
import { RE2JS } from 're2js';

/** One way a value breaks its schema: where (a JSON pointer into the body) and what. */
export interface SchemaProblem {
  pointer: string;
  message: string;
}

/** The largest schema a worker may declare for one type (its JSON; MySQL's TEXT holds 65,535 bytes). */
export const MAX_SCHEMA_BYTES = 60 * 1024;
/** Problems named in one answer at most; the rest are counted. */
export const MAX_PROBLEMS = 20;
/** Distinct schemas kept compiled; past it the validators start again (workers declare a handful). */
const MAX_COMPILED = 256;

/** The drafts a schema may name in `$schema`; without one it is read as 2020-12. */
const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/;
const DRAFT_2020 = /^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/;

/**
 * `pattern` runs on RE2 (linear time in the input): a worker's schema is code the scheduler runs
 * on every caller's params, and a backtracking engine would let one pattern (`^(a+)+$`) stop the
 * process for seconds on a 30-character value. RE2 has no lookaround or backreferences: a schema
 * that uses them is refused when it is declared.
 */
const re2: RegExpEngine = Object.assign(
  (pattern: string, flags: string) => {
    const compiled = RE2JS.compile(pattern);
    // Ajv keeps one compiled pattern per distinct text: the text is its key.
    return { test: (s: string) => compiled.test(s), toString: () => `/${pattern}/${flags}` };
  },
  { code: 're2' },
);

/** Keywords of a container whose verdict a placeholder inside it can change. */
const CONTAINER_SAFE = new Set([
  'type',
  'required',
  'additionalProperties',
  'minProperties',
  'maxProperties',
  'propertyNames',
  'minItems',
  'maxItems',
]);

function newValidators(): { v2020: Ajv2020; v07: Ajv07 } {
  const options = { allErrors: true, strict: false, code: { regExp: re2 } } as const;
  const v2020 = new Ajv2020(options);
  const v07 = new Ajv07(options);
  addFormats(v2020);
  addFormats(v07);
  return { v2020, v07 };
}

/**
 * JSON Schemas (draft 2020-12, or draft-07 when `$schema` says so) that task types declare for
 * their params and results: compiled once per distinct schema, every problem reported with its
 * JSON pointer. A schema may refer only to itself (`#/$defs/...`): nothing is fetched. Unknown
 * keywords are annotations (an `x-` hint for a form, say).
 */
export class JsonSchemas {
  /** Made at the first schema, not at start-up: most fleets declare none. */
  private validators: ReturnType<typeof newValidators> | undefined;
  private readonly byText = new Map<string, ValidateFunction>();
  /** The same model object asks again on every create: no serialising to find its validator. */
  private byObject = new WeakMap<object, ValidateFunction>();

  /** Why `schema` cannot be a type's schema, or undefined when it can. */
  problemOf(schema: unknown): string | undefined {
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
      return 'must be a JSON Schema object';
    const bytes = Buffer.byteLength(JSON.stringify(schema));
    if (bytes > MAX_SCHEMA_BYTES) return `is ${bytes} bytes; at most ${MAX_SCHEMA_BYTES} are kept`;
    const draft = (schema as { $schema?: unknown }).$schema;
    if (
      draft !== undefined &&
      !(typeof draft === 'string' && (DRAFT_07.test(draft) || DRAFT_2020.test(draft)))
    )
      return `names $schema ${JSON.stringify(draft)}: draft 2020-12 and draft-07 are read`;
    try {
      this.validator(schema as Record<string, unknown>);
      return undefined;
    } catch (err) {
      return `is not a JSON Schema: ${(err as Error).message}`;
    }
  }

  /**
   * The problems of `value` against `schema`, each pointer prefixed with `at` (e.g. `/params`).
   * `holes` are pointers (relative to the value) whose value a placeholder fills later: a problem
   * there or inside, or one that a value there could change (a `oneOf`, an `enum` of the whole),
   * is left for when the value is known.
   */
  check(
    schema: Record<string, unknown>,
    value: unknown,
    at: string,
    holes: readonly string[] = [],
  ): SchemaProblem[] {
    const validate = this.validator(schema);
    if (validate(value)) return [];
    return (validate.errors ?? [])
      .filter((e) => holes.length === 0 || !dependsOnHole(e, holes))
      .map((e) => ({ pointer: `${at}${pointerOf(e)}`, message: messageOf(e) }))
      .slice(0, MAX_PROBLEMS);
  }

  private validator(schema: Record<string, unknown>): ValidateFunction {
    const known = this.byObject.get(schema);
    if (known) return known;
    const text = JSON.stringify(schema);
    let fn = this.byText.get(text);
    if (!fn) {
      if (!this.validators || this.byText.size >= MAX_COMPILED) {
        // A fresh pair: removing schemas from Ajv leaves its compiled code behind.
        this.validators = newValidators();
        this.byText.clear();
        this.byObject = new WeakMap();
      }
      const draft = schema.$schema;
      const ajv =
        typeof draft === 'string' && DRAFT_07.test(draft)
          ? this.validators.v07
          : this.validators.v2020;
      const id = schema.$id;
      // Another version of a schema with the same $id replaces the one compiled before.
      if (typeof id === 'string' && ajv.getSchema(id)) ajv.removeSchema(id);
      fn = ajv.compile(schema);
      this.byText.set(text, fn);
    }
    this.byObject.set(schema, fn);
    return fn;
  }
}

/** Whether a placeholder's value could change this problem's verdict. */
function dependsOnHole(e: ErrorObject, holes: readonly string[]): boolean {
  const at = pointerOf(e);
  if (/\/(oneOf|anyOf|not|if|then|else|dependentSchemas)\b/.test(e.schemaPath)) return true;
  return holes.some((h) => {
    if (h === at || h.startsWith(`${at}/`)) {
      // The problem is at the placeholder, or at a container of it.
      return h === at || !CONTAINER_SAFE.has(e.keyword);
    }
    return at.startsWith(`${h}/`);
  });
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

/** The pointers (relative to `value`) of every string in it that holds a `{{...}}` placeholder. */
export function placeholderPointers(value: unknown, at = ''): string[] {
  if (typeof value === 'string') return value.includes('{{') ? [at] : [];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => placeholderPointers(v, `${at}/${escape(k)}`));
}

/** The problems as one line for a 400's message: the first few, and how many more. */
export function describeProblems(problems: readonly SchemaProblem[]): string {
  const shown = problems.slice(0, 3).map((p) => `${p.pointer || '/'} ${p.message}`);
  const more = problems.length > 3 ? ` (and ${problems.length - 3} more)` : '';
  return `${shown.join('; ')}${more}`;
}
