import 'reflect-metadata';

/** Where @nestjs/swagger keeps a DTO's documented properties (the OpenAPI document is made of them). */
const PROPERTIES = 'swagger/apiModelPropertiesArray';
const PROPERTY = 'swagger/apiModelProperties';

type Class = abstract new (...args: never[]) => unknown;

interface Shape {
  /** Properties documented as nullable: `null` is a value there (e.g. "no limit"). */
  nullable: Set<string>;
  /** Properties documented as another DTO (or a list of them): checked inside too. */
  nested: Map<string, Shape>;
}

const shapes = new WeakMap<Class, Shape | null>();

function documented(cls: Class): string[] {
  const names = Reflect.getMetadata(PROPERTIES, cls.prototype as object) as string[] | undefined;
  return (names ?? []).map((n) => n.replace(/^:/, ''));
}

/** The DTO class a property's `type` names, if it names one with documented properties. */
function dtoOf(type: unknown): Class | undefined {
  if (typeof type !== 'function') return undefined;
  // `type: () => X` is a thunk (no prototype); `type: X` is the class itself.
  const cls = (type.prototype ? type : (type as () => unknown)()) as Class;
  return typeof cls === 'function' && documented(cls).length > 0 ? cls : undefined;
}

function shapeOf(cls: Class): Shape | null {
  if (shapes.has(cls)) return shapes.get(cls) ?? null;
  const names = documented(cls);
  if (names.length === 0) {
    shapes.set(cls, null);
    return null;
  }
  const shape: Shape = { nullable: new Set(), nested: new Map() };
  shapes.set(cls, shape); // before the nested ones: a DTO may contain itself
  for (const name of names) {
    const meta = Reflect.getMetadata(PROPERTY, cls.prototype as object, name) as
      { nullable?: boolean; type?: unknown } | undefined;
    if (meta?.nullable) shape.nullable.add(name);
    const inner = dtoOf(meta?.type);
    const innerShape = inner ? shapeOf(inner) : null;
    if (innerShape) shape.nested.set(name, innerShape);
  }
  return shape;
}

function walk(shape: Shape, value: unknown, path: string, out: string[]): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return;
  for (const [key, v] of Object.entries(value)) {
    if (v === null) {
      if (!shape.nullable.has(key))
        out.push(`${path}${key} must not be null (leave it out for the default)`);
      continue;
    }
    const inner = shape.nested.get(key);
    if (!inner) continue;
    if (Array.isArray(v)) v.forEach((item, i) => walk(inner, item, `${path}${key}.${i}.`, out));
    else walk(inner, v, `${path}${key}.`, out);
  }
}

/** Whether a class is a DTO with documented properties (its body must be a JSON object). */
export function isDocumentedDto(cls: unknown): boolean {
  return typeof cls === 'function' && shapeOf(cls as Class) !== null;
}

/**
 * The fields of a body that are `null` where the DTO's documentation does not say nullable, as
 * refusal lines. class-validator's `@IsOptional()` lets `null` through like a missing field, so
 * `{"name": null}` would otherwise be taken as a change to nothing, or stored as a null the rest
 * of the code does not expect. Free JSON (`params`, `labels`) is not looked into.
 */
export function nullsRefused(cls: unknown, body: unknown): string[] {
  if (typeof cls !== 'function') return [];
  const shape = shapeOf(cls as Class);
  if (!shape) return [];
  const out: string[] = [];
  walk(shape, body, '', out);
  return out;
}
