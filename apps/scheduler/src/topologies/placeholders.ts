/**
 * Placeholders in node templates: `{{input.cluster}}`, `{{nodes.check.result.primary}}`,
 * `{{nodes.check.status}}`, `{{item}}`, `{{index}}`, `{{run.id}}`. A string that is one
 * placeholder and nothing else takes the value as it is (a list stays a list); a placeholder
 * inside other text is written into it (objects as JSON).
 */

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const WHOLE = /^\{\{\s*([^{}]*?)\s*\}\}$/;
const PATH = /^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$/;

/** What a node may read of its run. */
export interface PlaceholderScope {
  input: Record<string, unknown>;
  run: { id: string; name: string; version: number };
  nodes: Record<string, { status: string; result: unknown; task_id: string | null }>;
  item?: unknown;
  index?: number;
}

/** Every placeholder path in a template (strings anywhere in it, object keys excepted). */
export function placeholderPaths(template: unknown): string[] {
  const out: string[] = [];
  walkStrings(template, (s) => {
    for (const m of s.matchAll(PLACEHOLDER)) out.push(m[1]);
  });
  return out;
}

/** Why a placeholder path is not one a node may use, or undefined when it is. */
export function pathProblem(
  path: string,
  opts: { upstream: ReadonlySet<string>; inFork: boolean },
): string | undefined {
  if (!PATH.test(path)) return `{{${path}}} is not a dotted path`;
  const [root, second, third] = path.split('.');
  switch (root) {
    case 'input':
      return undefined;
    case 'run':
      return second === 'id' || second === 'name' || second === 'version'
        ? undefined
        : `{{${path}}}: a run has id, name and version`;
    case 'item':
    case 'index':
      return opts.inFork ? undefined : `{{${path}}} is only known to a for_each node`;
    case 'nodes':
      if (second === undefined) return `{{${path}}} names no node`;
      if (!opts.upstream.has(second))
        return `{{${path}}} reads node ${second}, which is not upstream of this node`;
      if (third !== 'result' && third !== 'status' && third !== 'task_id')
        return `{{${path}}}: a node has result, status and task_id`;
      return undefined;
    default:
      return `{{${path}}} starts with ${root}: use input, nodes, run, item or index`;
  }
}

/** Raised when a placeholder has no value in the run (a field the parent's result lacks). */
export class PlaceholderMissing extends Error {}

/** The template with every placeholder replaced by its value in `scope`. */
export function render<T>(template: T, scope: PlaceholderScope): T {
  return mapStrings(template, (s) => {
    const whole = WHOLE.exec(s);
    if (whole) return lookup(whole[1], scope);
    return s.replace(PLACEHOLDER, (_, path: string) => {
      const v = lookup(path, scope);
      return typeof v === 'string' ? v : JSON.stringify(v);
    });
  }) as T;
}

function lookup(path: string, scope: PlaceholderScope): unknown {
  let v: unknown = scope;
  for (const part of path.split('.')) {
    if (v === null || typeof v !== 'object' || !Object.prototype.hasOwnProperty.call(v, part))
      throw new PlaceholderMissing(`{{${path}}} has no value in this run`);
    v = (v as Record<string, unknown>)[part];
  }
  if (v === undefined) throw new PlaceholderMissing(`{{${path}}} has no value in this run`);
  return v;
}

function walkStrings(v: unknown, f: (s: string) => void): void {
  if (typeof v === 'string') f(v);
  else if (Array.isArray(v)) v.forEach((x) => walkStrings(x, f));
  else if (v !== null && typeof v === 'object') Object.values(v).forEach((x) => walkStrings(x, f));
}

function mapStrings(v: unknown, f: (s: string) => unknown): unknown {
  if (typeof v === 'string') return f(v);
  if (Array.isArray(v)) return v.map((x) => mapStrings(x, f));
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mapStrings(x, f)]));
  return v;
}
