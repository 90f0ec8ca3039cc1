import { RE2JS } from 're2js';
import { invalid, isPlainObject } from './checks';

/** One condition on a JSON field: equal to a scalar, or present / absent. */
export type JsonCondition = { equals: string | number | boolean | null } | { exists: boolean };

/** What a record must look like for a rule to fire. */
export type MatchSpec = { regex: string; flags?: string } | { json: Record<string, JsonCondition> };

/** A record as the matcher sees it: its text, and its fields when it is a JSON object. */
export interface RecordContent {
  text: string;
  fields: Record<string, unknown> | null;
}

/** Looks a placeholder up: a capture (regex), a field path (JSON) or a built-in; undefined if none. */
export type Lookup = (name: string) => unknown;

/** Placeholders every rule may use besides its captures. */
export const BUILTIN_PLACEHOLDERS = ['_line', '_source', '_position'] as const;

const PLACEHOLDER = /\{\{\s*([A-Za-z_$][\w$.-]*)\s*\}\}/g;
const WHOLE_PLACEHOLDER = /^\{\{\s*([A-Za-z_$][\w$.-]*)\s*\}\}$/;
const FIELD_PATH = /^[A-Za-z_$][\w$-]*(\.[A-Za-z_$0-9][\w$-]*)*$/;
const MAX_REGEX = 2000;
const MAX_CONDITIONS = 32;

/** Checks an untrusted match spec and returns it typed; VALIDATION_FAILED on anything off. */
export function parseMatchSpec(raw: unknown): MatchSpec {
  if (!isPlainObject(raw)) throw invalid('match must be an object: {regex} or {json}');
  const keys = Object.keys(raw);
  if ('regex' in raw) {
    const extra = keys.filter((k) => k !== 'regex' && k !== 'flags');
    if (extra.length) throw invalid(`match: unknown field(s) ${extra.join(', ')}`);
    const { regex, flags } = raw;
    if (typeof regex !== 'string' || regex.length === 0 || regex.length > MAX_REGEX)
      throw invalid(`match.regex must be a string of 1-${MAX_REGEX} characters`);
    if (
      flags !== undefined &&
      (typeof flags !== 'string' ||
        !/^[imsu]{0,4}$/.test(flags) ||
        new Set(flags).size < flags.length)
    )
      throw invalid('match.flags may only hold i, m, s and u, each at most once');
    try {
      compileRegex(regex, flags);
    } catch (err) {
      throw invalid(
        `match.regex is not a regular expression the linear-time engine (RE2 syntax) takes: ${(err as Error).message}; lookarounds and backreferences are not supported`,
      );
    }
    return flags ? { regex, flags } : { regex };
  }
  if ('json' in raw) {
    if (keys.length !== 1) throw invalid('match: {json} takes no other field');
    const json = raw.json;
    if (!isPlainObject(json) || Object.keys(json).length === 0)
      throw invalid('match.json must map field paths to conditions');
    if (Object.keys(json).length > MAX_CONDITIONS)
      throw invalid(`match.json takes at most ${MAX_CONDITIONS} conditions`);
    const out: Record<string, JsonCondition> = {};
    for (const [path, cond] of Object.entries(json)) {
      if (!FIELD_PATH.test(path) || path.length > 200)
        throw invalid(`match.json: ${JSON.stringify(path)} is not a field path like a.b.c`);
      if (!isPlainObject(cond) || Object.keys(cond).length !== 1)
        throw invalid(`match.json.${path} must be {equals: value} or {exists: boolean}`);
      if ('equals' in cond) {
        const v = cond.equals;
        if (v !== null && !['string', 'number', 'boolean'].includes(typeof v))
          throw invalid(`match.json.${path}.equals must be a string, number, boolean or null`);
        out[path] = { equals: v as string | number | boolean | null };
      } else if ('exists' in cond && typeof cond.exists === 'boolean') {
        out[path] = { exists: cond.exists };
      } else {
        throw invalid(`match.json.${path} must be {equals: value} or {exists: boolean}`);
      }
    }
    return { json: out };
  }
  throw invalid('match must be {regex: "..."} or {json: {...}}');
}

/** The value at a dot path of a JSON object, or undefined. */
export function readPath(obj: Record<string, unknown>, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (!isPlainObject(cur) || !Object.prototype.hasOwnProperty.call(cur, part)) return undefined;
    cur = cur[part];
  }
  return cur;
}

/**
 * A rule's regular expression, compiled for RE2JS: a linear-time engine (RE2's, in JavaScript),
 * so that no pattern, however it nests its repetitions, can stall the event loop on a long line
 * (`(a+)+$` against 60,000 characters: tens of milliseconds, where V8's backtracking never came
 * back). RE2 syntax: named groups `(?<name>...)` or `(?P<name>...)`, classes, `\p{...}`; no
 * lookarounds or backreferences. Flags: i, m, s; u is accepted (RE2 is always Unicode).
 */
function compileRegex(regex: string, flags = ''): RE2JS {
  let bits = 0;
  if (flags.includes('i')) bits |= RE2JS.CASE_INSENSITIVE;
  if (flags.includes('m')) bits |= RE2JS.MULTILINE;
  if (flags.includes('s')) bits |= RE2JS.DOTALL;
  return RE2JS.compile(regex, bits);
}

/** A compiled match: the captures of a record, or null when it does not match. */
export type Matcher = (content: RecordContent) => Lookup | null;

export function compileMatcher(spec: MatchSpec): Matcher {
  if ('regex' in spec) {
    const re = compileRegex(spec.regex, spec.flags);
    const names = new Set(Object.keys(re.namedGroups()));
    return (content) => {
      const m = re.matcher(content.text);
      if (!m.find()) return null;
      // An optional group that did not take part is filled as an empty string.
      return (name) => (names.has(name) ? (m.group(name) ?? '') : undefined);
    };
  }
  const conditions = Object.entries(spec.json);
  return (content) => {
    const fields = content.fields;
    if (!fields) return null;
    for (const [path, cond] of conditions) {
      const v = readPath(fields, path);
      if ('exists' in cond) {
        if ((v !== undefined) !== cond.exists) return null;
      } else if (v !== cond.equals) {
        return null;
      }
    }
    // JSON rules capture by field path: `{{ctx.host}}` reads fields.ctx.host at fill time.
    return (name) => readPath(fields, name);
  };
}

/** Every placeholder name used in a template's string values. */
export function placeholdersOf(template: unknown): Set<string> {
  const names = new Set<string>();
  const walk = (v: unknown): void => {
    if (typeof v === 'string') for (const m of v.matchAll(PLACEHOLDER)) names.add(m[1]);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (isPlainObject(v)) Object.values(v).forEach(walk);
  };
  walk(template);
  return names;
}

/** Regex named groups of a pattern (the placeholders a regex rule can fill); null when unknown. */
export function groupNamesOf(spec: MatchSpec): Set<string> | null {
  if (!('regex' in spec)) return null;
  // The engine's own list: `(?<name>` and `(?P<name>` alike, nothing from a character class.
  // A regex RE2 does not take (a rule being disabled may hold one): its groups are unknown.
  try {
    return new Set(Object.keys(compileRegex(spec.regex, spec.flags).namedGroups()));
  } catch {
    return null;
  }
}

function asText(v: unknown): string {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * Fills `{{name}}` placeholders in every string value of a template (keys are left alone); a
 * missing value fills as empty text. Under `params` (free JSON for the worker) a value that is
 * exactly one placeholder takes the captured value with its JSON type, so a number stays a number;
 * everywhere else (names, labels, URLs) values are spliced in as text, as the create body expects.
 */
export function fillTemplate<T extends Record<string, unknown>>(template: T, lookup: Lookup): T {
  const fill = (v: unknown, typed: boolean): unknown => {
    if (typeof v === 'string') {
      const whole = typed ? WHOLE_PLACEHOLDER.exec(v) : null;
      if (whole) {
        const raw = lookup(whole[1]);
        return raw === undefined || raw === null ? '' : raw;
      }
      return v.replace(PLACEHOLDER, (_m, name: string) => asText(lookup(name)));
    }
    if (Array.isArray(v)) return v.map((x) => fill(x, typed));
    if (isPlainObject(v))
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x, typed)]));
    return v;
  };
  return Object.fromEntries(
    Object.entries(template).map(([k, v]) => [k, fill(v, k === 'params')]),
  ) as T;
}
