import { useId } from 'react';

/** The part of a JSON Schema the form reads: an object's properties, each with a simple type. */
export interface PropertySchema {
  type?: string | string[];
  enum?: unknown[];
  default?: unknown;
  description?: string;
  title?: string;
  minimum?: number;
  maximum?: number;
}

/** What the form holds for each property: the text of an input, or a checkbox's state. */
export type FieldValues = Record<string, string | boolean>;

/** The properties a form can offer, or undefined when the schema describes no object fields. */
export function propertiesOf(
  schema: Record<string, unknown> | null | undefined,
): Record<string, PropertySchema> | undefined {
  const props = schema?.properties;
  if (!props || typeof props !== 'object' || Array.isArray(props)) return undefined;
  return Object.keys(props).length > 0 ? (props as Record<string, PropertySchema>) : undefined;
}

const typeOf = (p: PropertySchema): string =>
  p.enum
    ? 'enum'
    : Array.isArray(p.type)
      ? (p.type.find((t) => t !== 'null') ?? '')
      : (p.type ?? '');

/** A property typed in as text: a number, a string, or JSON for anything else. */
const isText = (p: PropertySchema): boolean => typeOf(p) !== 'boolean' && typeOf(p) !== 'enum';

/** The form's starting values: the params given, else each property's default (unless `defaults` is false). */
export function valuesFrom(
  props: Record<string, PropertySchema>,
  params: Record<string, unknown>,
  defaults = true,
): FieldValues {
  const out: FieldValues = {};
  for (const [name, p] of Object.entries(props)) {
    const v = Object.hasOwn(params, name) ? params[name] : defaults ? p.default : undefined;
    if (typeOf(p) === 'boolean') out[name] = v === true;
    else if (v === undefined) out[name] = '';
    else if (typeOf(p) === 'string' && typeof v === 'string') out[name] = v;
    else out[name] = JSON.stringify(v);
  }
  return out;
}

/**
 * The params the form stands for: numbers as numbers, an enum's choice as its JSON value, a
 * blank field left out, anything but a string or number parsed as JSON. `extra` keeps what the
 * schema does not name (typed in the JSON view). Throws naming the field whose JSON does not parse.
 */
export function paramsFrom(
  props: Record<string, PropertySchema>,
  values: FieldValues,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...extra };
  for (const [name, p] of Object.entries(props)) {
    delete out[name];
    const v = values[name];
    const type = typeOf(p);
    // A box says yes or no: both are sent (a required one can be false).
    if (type === 'boolean') {
      out[name] = v === true;
      continue;
    }
    if (typeof v !== 'string' || v.trim() === '') continue;
    if (type === 'string') out[name] = v;
    // Plain decimal text is a number; anything else goes as typed, and the schema says what is wrong.
    else if (type === 'number' || type === 'integer')
      out[name] = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(v.trim()) ? Number(v) : v;
    else {
      try {
        out[name] = JSON.parse(v);
      } catch {
        throw new Error(`${name}: not JSON`);
      }
    }
  }
  return out;
}

/** One generated field per property of the schema, each with its description and the API's word on it. */
export function ParamsFields({
  props,
  required,
  values,
  onChange,
  problems,
}: {
  props: Record<string, PropertySchema>;
  required: readonly string[];
  values: FieldValues;
  /** The values after an edit, and the field edited (its problem is then out of date). */
  onChange: (values: FieldValues, edited: string) => void;
  /** The API's refusal, by property: shown under the field. */
  problems: Record<string, string>;
}) {
  const base = useId();
  return (
    <fieldset className="stack">
      <legend>Params</legend>
      {Object.entries(props).map(([name, p], i) => {
        const id = `${base}-${i}`;
        const hint = p.description ? `${id}-hint` : undefined;
        const problem = problems[name] ? `${id}-problem` : undefined;
        const describedBy = [hint, problem].filter(Boolean).join(' ') || undefined;
        const set = (v: string | boolean): void => onChange({ ...values, [name]: v }, name);
        const label = `${p.title ?? name}${required.includes(name) ? ' (required)' : ''}`;
        const type = typeOf(p);
        const value = values[name];
        return (
          <div className="field" key={name}>
            {type === 'boolean' ? (
              <label htmlFor={id} className="check">
                <input
                  id={id}
                  type="checkbox"
                  checked={value === true}
                  aria-describedby={describedBy}
                  aria-invalid={problem ? true : undefined}
                  onChange={(e) => set(e.target.checked)}
                />{' '}
                {label}
              </label>
            ) : (
              <label htmlFor={id}>{label}</label>
            )}
            {type === 'enum' ? (
              <select
                id={id}
                value={typeof value === 'string' ? value : ''}
                aria-describedby={describedBy}
                aria-invalid={problem ? true : undefined}
                onChange={(e) => set(e.target.value)}
              >
                <option value="">(not set)</option>
                {(p.enum ?? []).map((option) => (
                  <option key={JSON.stringify(option)} value={JSON.stringify(option)}>
                    {typeof option === 'string' ? option : JSON.stringify(option)}
                  </option>
                ))}
              </select>
            ) : isText(p) ? (
              <input
                id={id}
                value={typeof value === 'string' ? value : ''}
                aria-describedby={describedBy}
                aria-invalid={problem ? true : undefined}
                placeholder={
                  type === 'string' || type === 'number' || type === 'integer' ? type : 'JSON'
                }
                onChange={(e) => set(e.target.value)}
              />
            ) : null}
            {hint ? (
              <span id={hint} className="hint">
                {p.description}
              </span>
            ) : null}
            {problem ? (
              <span id={problem} className="error">
                {problems[name]}
              </span>
            ) : null}
          </div>
        );
      })}
    </fieldset>
  );
}

/**
 * The API's schema problems by top-level param: `/params/seconds` is the field `seconds`. A
 * problem deeper in a field (`/params/hosts/2`) is shown on the field, with its place.
 */
export function problemsByParam(data: unknown): {
  byParam: Record<string, string>;
  rest: string[];
} {
  const errors = (data as { errors?: { pointer?: string; message?: string }[] } | null)?.errors;
  const byParam: Record<string, string> = {};
  const rest: string[] = [];
  for (const e of Array.isArray(errors) ? errors : []) {
    const m = /^\/params\/([^/]+)(\/.*)?$/.exec(e.pointer ?? '');
    if (!m) {
      rest.push(`${e.pointer || '/'} ${e.message ?? ''}`);
      continue;
    }
    const name = m[1].replace(/~1/g, '/').replace(/~0/g, '~');
    const text = m[2] ? `${m[2]}: ${e.message ?? ''}` : (e.message ?? '');
    byParam[name] = byParam[name] ? `${byParam[name]}; ${text}` : text;
  }
  return { byParam, rest };
}

/** A comma-separated list as typed (lock keys): each item trimmed, blanks left out. */
export const listOf = (text: string): string[] =>
  text
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);

/** Labels typed one `key=value` a line; a line without `=` is refused here. */
export function parseLabels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (!line) continue;
    const at = line.indexOf('=');
    if (at <= 0) throw new Error(`"${line}" is not key=value`);
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

/** Labels as the form shows them: `key=value`, one a line. */
export const labelsText = (labels: Record<string, string> | undefined): string =>
  Object.entries(labels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');

/**
 * Whether the fields can stand for `params` exactly: every param the schema names comes back the
 * same from its field (a box absent from the params would come back false, a number typed as
 * text as a number...). When not, a form that changes something else starts in the JSON view,
 * so saving it changes nothing it did not show.
 */
export function fieldsKeep(
  props: Record<string, PropertySchema>,
  params: Record<string, unknown>,
): boolean {
  const extra = Object.fromEntries(
    Object.entries(params).filter(([k]) => !Object.hasOwn(props, k)),
  );
  try {
    const back = paramsFrom(props, valuesFrom(props, params, false), extra);
    const sorted = (o: Record<string, unknown>): string =>
      JSON.stringify(
        Object.keys(o)
          .sort()
          .map((k) => [k, o[k]]),
      );
    return sorted(back) === sorted(params);
  } catch {
    return false;
  }
}
