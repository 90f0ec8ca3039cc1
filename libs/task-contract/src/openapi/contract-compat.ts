/**
 * Which changes between two versions of an OpenAPI document break someone who built against the
 * older one: a worker written from it, or a scheduler calling such a worker. The worker document's
 * generator refuses to write a document with such a change unless its version moved.
 */

type Json = Record<string, unknown>;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const asObject = (v: unknown): Json => (isObject(v) ? v : {});
const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];

/** Schema names used in request bodies (directly or through other request schemas). */
function requestSchemas(doc: Json): Set<string> {
  const schemas = asObject(asObject(doc.components).schemas);
  const found = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!isObject(node)) return;
    const ref = node.$ref;
    if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
      const name = ref.slice('#/components/schemas/'.length);
      if (!found.has(name)) {
        found.add(name);
        visit(schemas[name]);
      }
    }
    Object.values(node).forEach(visit);
  };
  for (const item of Object.values(asObject(doc.paths)))
    for (const m of METHODS) visit(asObject(asObject(item)[m]).requestBody);
  return found;
}

/** Parameters of an operation, by `in:name`, with whether they are required. */
function parameters(op: Json): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const p of Array.isArray(op.parameters) ? op.parameters : []) {
    const param = asObject(p);
    out.set(`${String(param.in)}:${String(param.name)}`, param.required === true);
  }
  return out;
}

/** The enum values a schema allows, directly or in its items. */
function enumOf(schema: Json): string[] | undefined {
  if (Array.isArray(schema.enum)) return schema.enum.map(String);
  const items = asObject(schema.items);
  return Array.isArray(items.enum) ? items.enum.map(String) : undefined;
}

/**
 * The breaking changes from `before` to `after`, in words; empty when a party built against
 * `before` keeps working. Breaking: an operation, a response status or a parameter removed; a
 * parameter newly required; in a request schema, a property removed (unknown fields are refused),
 * one newly required, or an enum value removed; in any other (answer) schema, a property removed,
 * one no longer required, or an enum value added that a reader does not expect (a status it
 * cannot handle); a schema removed.
 */
export function breakingChanges(before: unknown, after: unknown): string[] {
  const a = asObject(before);
  const b = asObject(after);
  const problems: string[] = [];
  const pathsA = asObject(a.paths);
  const pathsB = asObject(b.paths);
  for (const [path, itemA] of Object.entries(pathsA)) {
    for (const m of METHODS) {
      const opA = asObject(itemA)[m];
      if (!isObject(opA)) continue;
      const opB = asObject(pathsB[path])[m];
      const where = `${m.toUpperCase()} ${path}`;
      if (!isObject(opB)) {
        problems.push(`${where} was removed`);
        continue;
      }
      for (const status of Object.keys(asObject(opA.responses)))
        if (!(status in asObject(opB.responses)))
          problems.push(`${where} no longer answers ${status}`);
      const paramsA = parameters(opA);
      const paramsB = parameters(opB);
      for (const [key, required] of paramsB) {
        if (!paramsA.has(key) && required) problems.push(`${where} requires a new parameter ${key}`);
        if (paramsA.get(key) === false && required)
          problems.push(`${where} now requires parameter ${key}`);
      }
      for (const key of paramsA.keys())
        if (!paramsB.has(key)) problems.push(`${where} no longer takes parameter ${key}`);
    }
  }
  const schemasA = asObject(asObject(a.components).schemas);
  const schemasB = asObject(asObject(b.components).schemas);
  const requests = requestSchemas(a);
  for (const [name, sa] of Object.entries(schemasA)) {
    const sb = schemasB[name];
    if (!isObject(sb)) {
      problems.push(`schema ${name} was removed`);
      continue;
    }
    const schemaA = asObject(sa);
    const propsA = asObject(schemaA.properties);
    const propsB = asObject(sb.properties);
    const requiredA = strings(schemaA.required);
    const requiredB = strings(sb.required);
    for (const prop of Object.keys(propsA))
      if (!(prop in propsB)) problems.push(`${name}.${prop} was removed`);
    const enumA = enumOf(schemaA);
    const enumB = enumOf(sb);
    if (requests.has(name)) {
      for (const r of requiredB)
        if (!requiredA.includes(r)) problems.push(`${name}.${r} is newly required in a request`);
      if (enumA && enumB)
        for (const v of enumA)
          if (!enumB.includes(v)) problems.push(`${name} no longer accepts ${v}`);
    } else {
      for (const r of requiredA)
        if (!requiredB.includes(r) && r in propsB)
          problems.push(`${name}.${r} is no longer always answered`);
      if (enumA && enumB)
        for (const v of enumB)
          if (!enumA.includes(v)) problems.push(`${name} may now answer ${v}, unknown before`);
    }
    for (const [prop, pa] of Object.entries(propsA)) {
      const pb = propsB[prop];
      if (!isObject(pb)) continue;
      const ea = enumOf(asObject(pa));
      const eb = enumOf(pb);
      if (!ea || !eb) continue;
      if (requests.has(name)) {
        for (const v of ea)
          if (!eb.includes(v)) problems.push(`${name}.${prop} no longer accepts ${v}`);
      } else {
        for (const v of eb)
          if (!ea.includes(v)) problems.push(`${name}.${prop} may now answer ${v}, unknown before`);
      }
    }
  }
  return problems;
}

/** Compares two `major.minor.patch` versions: negative, zero or positive. */
export function compareVersions(x: string, y: string): number {
  const px = x.split('.').map(Number);
  const py = y.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const d = (px[i] ?? 0) - (py[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * Why `after` may not replace `before` (empty when it may): a breaking change needs a higher
 * major version; any version must not go back.
 */
export function versionProblems(before: unknown, after: unknown): string[] {
  const va = String(asObject(asObject(before).info).version ?? '0.0.0');
  const vb = String(asObject(asObject(after).info).version ?? '0.0.0');
  if (compareVersions(vb, va) < 0) return [`version ${vb} is lower than ${va}`];
  const breaking = breakingChanges(before, after);
  if (breaking.length === 0) return [];
  const majorMoved = Number(vb.split('.')[0]) > Number(va.split('.')[0]);
  return majorMoved
    ? []
    : [
        `breaking changes need a new major version (still ${vb}) and a changelog entry marked breaking:`,
        ...breaking.map((b) => `  - ${b}`),
      ];
}
