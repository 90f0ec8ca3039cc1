import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './processes';

export interface Schema {
  $ref?: string;
  type?: string;
  nullable?: boolean;
  enum?: unknown[];
  required?: string[];
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
}

export interface Media {
  schema?: Schema;
  examples?: Record<string, { $ref?: string; value?: unknown }>;
}
export interface Response {
  $ref?: string;
  description?: string;
  content?: Record<string, Media>;
}
export interface Operation {
  operationId: string;
  parameters?: { in: string; name: string }[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, Response>;
  security?: Record<string, unknown>[];
}
export interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, Schema>;
    responses?: Record<string, Response>;
    examples?: Record<string, { value: unknown }>;
  };
}

export const readDocument = (name: string): Document =>
  JSON.parse(readFileSync(join(ROOT, 'openapi', name), 'utf8')) as Document;

/** A `#/components/...` reference, followed. */
export function deref<T>(doc: Document, value: T & { $ref?: string }): T {
  if (!value.$ref) return value;
  const parts = value.$ref.replace(/^#\//, '').split('/');
  let at: unknown = doc;
  for (const p of parts) at = (at as Record<string, unknown>)[p];
  if (at === undefined) throw new Error(`unresolved reference ${value.$ref}`);
  return deref(doc, at as T & { $ref?: string });
}

/**
 * Where `value` departs from `schema` (an OpenAPI 3.0 schema): a missing required field, a wrong
 * type, a value outside an enum, or a field the schema does not name (where it names its fields
 * and allows no others). Empty when it conforms.
 */
export function departures(doc: Document, schema: Schema, value: unknown, at = '$'): string[] {
  const s = deref(doc, schema);
  if (value === null)
    return s.nullable || s.enum?.includes(null) ? [] : [`${at}: null where the schema has no null`];
  if (s.allOf) return s.allOf.flatMap((x) => departures(doc, x, value, at));
  if (s.oneOf || s.anyOf) {
    const options = (s.oneOf ?? s.anyOf)!;
    return options.some((x) => departures(doc, x, value, at).length === 0)
      ? []
      : [`${at}: matches none of ${options.length} alternatives`];
  }
  if (s.enum && !s.enum.includes(value))
    return [`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(s.enum)}`];
  const type = s.type ?? (s.properties ? 'object' : undefined);
  switch (type) {
    case undefined:
      return [];
    case 'string':
      return typeof value === 'string' ? [] : [`${at}: not a string`];
    case 'boolean':
      return typeof value === 'boolean' ? [] : [`${at}: not a boolean`];
    case 'integer':
      return Number.isInteger(value) ? [] : [`${at}: not an integer`];
    case 'number':
      return typeof value === 'number' ? [] : [`${at}: not a number`];
    case 'array':
      if (!Array.isArray(value)) return [`${at}: not an array`];
      return s.items ? value.flatMap((v, i) => departures(doc, s.items!, v, `${at}[${i}]`)) : [];
    case 'object': {
      if (typeof value !== 'object' || Array.isArray(value)) return [`${at}: not an object`];
      const obj = value as Record<string, unknown>;
      const out = (s.required ?? [])
        .filter((k) => !(k in obj))
        .map((k) => `${at}.${k}: missing (required)`);
      for (const [k, v] of Object.entries(obj)) {
        const prop = s.properties?.[k];
        if (prop) out.push(...departures(doc, prop, v, `${at}.${k}`));
        else if (typeof s.additionalProperties === 'object')
          out.push(...departures(doc, s.additionalProperties, v, `${at}.${k}`));
        else if (s.properties && s.additionalProperties !== true)
          out.push(`${at}.${k}: not in the schema`);
      }
      return out;
    }
    default:
      return [`${at}: unknown schema type ${type}`];
  }
}
