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
  run: {
    id: string;
    name: string;
    version: number;
    /** Known to failure handlers and finally-nodes only. */
    outcome?: string;
    error?: string | null;
    failed_nodes?: string[];
  };
  nodes: Record<
    string,
    { status: string; result: unknown; task_id: string | null; error: string | null }
  >;
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

/** What a node may read: its upstream nodes; a handler or finally-node also every node of the graph. */
export interface PathRules {
  upstream: ReadonlySet<string>;
  inFork: boolean;
  /** A failure handler or finally-node: it also reads the run's outcome and failure. */
  afterRun?: boolean;
  /** With `afterRun`: the nodes of the run's graph, which have ended when it starts. */
  graph?: ReadonlySet<string>;
}

const RUN_FIELDS = ['id', 'name', 'version'];
const RUN_END_FIELDS = ['outcome', 'error', 'failed_nodes'];
const NODE_FIELDS = ['result', 'status', 'task_id', 'error'];

/** Why a placeholder path is not one a node may use, or undefined when it is. */
export function pathProblem(path: string, opts: PathRules): string | undefined {
  if (!PATH.test(path)) return `{{${path}}} is not a dotted path`;
  const [root, second, third] = path.split('.');
  switch (root) {
    case 'input':
      return undefined;
    case 'run':
      if (RUN_FIELDS.includes(second)) return undefined;
      if (RUN_END_FIELDS.includes(second))
        return opts.afterRun
          ? undefined
          : `{{${path}}} is known only to on_failure and finally nodes, which run once the other nodes ended`;
      return `{{${path}}}: a run has ${[...RUN_FIELDS, ...RUN_END_FIELDS].join(', ')}`;
    case 'item':
    case 'index':
      return opts.inFork ? undefined : `{{${path}}} is only known to a for_each node`;
    case 'nodes':
      if (second === undefined) return `{{${path}}} names no node`;
      if (!opts.upstream.has(second) && !(opts.afterRun && opts.graph?.has(second)))
        return `{{${path}}} reads node ${second}, which is not upstream of this node`;
      if (!NODE_FIELDS.includes(third)) return `{{${path}}}: a node has ${NODE_FIELDS.join(', ')}`;
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
