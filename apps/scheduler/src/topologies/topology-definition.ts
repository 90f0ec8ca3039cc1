import { ContractErrorCode, ContractException } from '@baton/task-contract';
import {
  DefinitionContext,
  KEY,
  MAX_DEADLINE_SECONDS,
  NODE_KINDS,
  NodeBase,
  NodeDef,
  TRIGGER_RULES,
  TopologySpec,
  TriggerRule,
  bad,
  forEachOf,
  isObject,
  kindSpec,
  phaseOf,
  strings,
} from './node-kinds';
import { pathProblem, placeholderPaths } from './placeholders';

export {
  MAX_FOR_EACH,
  TRIGGER_RULES,
  forEachOf,
  kindOf,
  type DefinitionContext,
  type NodeDef,
  type NodeKind,
  type TopologySpec,
  type TriggerRule,
} from './node-kinds';

export const MAX_NODES = 1000;
export const MAX_DEPTH = 5;
export const TOPOLOGY_NAME = /^[a-z0-9][a-z0-9._-]{0,99}$/;

/** One thing wrong with a definition: the node it is about (when it is about one) and what. */
export interface DefinitionProblem {
  node?: string;
  /** Where in the body, for a node's params that break its type's schema (one problem each). */
  pointer?: string;
  message: string;
}

/** Up to this many problems are reported at once; the rest wait for the next check. */
const MAX_PROBLEMS = 100;

/**
 * A definition body read and checked: cycles, unknown keys, unknown task types, bad placeholders,
 * too many nodes. Throws VALIDATION_FAILED naming the first node at fault (message and
 * `data.node`), with every problem found in `data.errors` (one per node at most), so a person can
 * mend them all at once. Checks that need a sound graph (cycles, placeholders) run only once the
 * nodes and their dependencies are sound.
 */
export function parseDefinition(body: unknown, ctx: DefinitionContext): TopologySpec {
  try {
    return readDefinition(body, ctx);
  } catch (err) {
    // A problem that stopped the reading (a cycle, too many nodes) is the only one in the list.
    if (!(err instanceof ContractException) || (err.data as { errors?: unknown })?.errors)
      throw err;
    const node = (err.data as { node?: string } | null)?.node;
    throw new ContractException(err.code, err.message, {
      ...(node ? { node } : {}),
      errors: [node ? { node, message: err.message } : { message: err.message }],
    });
  }
}

function readDefinition(body: unknown, ctx: DefinitionContext): TopologySpec {
  if (!isObject(body)) throw bad('a definition is a JSON object');
  const {
    name,
    description = '',
    rollback_on_failure = false,
    fail_fast,
    deadline_seconds,
    nodes,
  } = body;
  if (typeof name !== 'string' || !TOPOLOGY_NAME.test(name))
    throw bad('name must be 1 to 100 of a-z, 0-9, ".", "_", "-", starting with a letter or digit');
  if (typeof description !== 'string' || description.length > 500)
    throw bad('description must be a string of at most 500 characters');
  if (typeof rollback_on_failure !== 'boolean') throw bad('rollback_on_failure must be a boolean');
  if (
    fail_fast !== undefined &&
    fail_fast !== false &&
    fail_fast !== true &&
    fail_fast !== 'cancel'
  )
    throw bad('fail_fast must be true, false or "cancel"');
  if (deadline_seconds !== undefined && deadline_seconds !== null) checkDeadline(deadline_seconds);
  if (!Array.isArray(nodes) || nodes.length === 0) throw bad('nodes must be a non-empty list');
  if (nodes.length > MAX_NODES)
    throw bad(
      `a definition has at most ${MAX_NODES} nodes (this one has ${nodes.length})`,
      nodeKey(nodes[MAX_NODES]),
    );
  const problems: DefinitionProblem[] = [];
  /** Runs a check, keeping its problem; `at` is the body's pointer to what it checks. */
  const collect = <T>(check: () => T, at = ''): T | undefined => {
    try {
      return check();
    } catch (err) {
      if (!(err instanceof ContractException)) throw err;
      const data = err.data as { node?: string; errors?: { pointer: string; message: string }[] };
      const node = data?.node;
      if (node && Array.isArray(data.errors)) {
        for (const e of data.errors)
          problems.push({
            node,
            pointer: `${at}${e.pointer}`,
            message: `node ${node}: ${at}${e.pointer} ${e.message}`,
          });
        return undefined;
      }
      problems.push(node ? { node, message: err.message } : { message: err.message });
      return undefined;
    }
  };
  const parsed = nodes.flatMap((n, i) => collect(() => parseNode(n, i, ctx), `/nodes/${i}`) ?? []);
  // Keys of nodes that could not be read still exist: a dependency on one is not "unknown".
  const present = new Set(nodes.map(nodeKey).filter((k): k is string => k !== undefined));
  const byKey = new Map<string, NodeDef>();
  for (const n of parsed) {
    if (byKey.has(n.key)) collect(() => fail('the key is used by two nodes', n.key));
    else byKey.set(n.key, n);
  }
  for (const n of parsed) collect(() => checkDependencies(n, byKey, present));
  if (problems.length === 0) {
    checkAcyclic(parsed, byKey);
    const ancestors = ancestorSets(parsed, byKey);
    // Handlers read the run's nodes; finally-nodes the handlers too (both have ended by then).
    const main = parsed.filter((n) => phaseOf(n) === 'main').map((n) => n.key);
    const handlers = parsed.filter((n) => phaseOf(n) === 'handler').map((n) => n.key);
    const readable = {
      main: new Set<string>(),
      handler: new Set(main),
      finally: new Set([...main, ...handlers]),
    };
    for (const n of parsed)
      collect(() =>
        checkReferences(n, byKey, ancestors.get(n.key) ?? new Set(), readable[phaseOf(n)]),
      );
  }
  if (problems.length) {
    const [first] = problems;
    throw new ContractException(ContractErrorCode.VALIDATION_FAILED, first.message, {
      ...(first.node ? { node: first.node } : {}),
      errors: problems.slice(0, MAX_PROBLEMS),
    });
  }
  return {
    name,
    description,
    rollback_on_failure,
    ...(fail_fast === true || fail_fast === 'cancel' ? { fail_fast } : {}),
    ...(typeof deadline_seconds === 'number' ? { deadline_seconds } : {}),
    nodes: parsed,
  };
}

/** A run's deadline, in the definition or given to one run: whole seconds, 1 to 30 days. */
export function checkDeadline(v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_DEADLINE_SECONDS)
    throw bad(
      `deadline_seconds must be a whole number of seconds from 1 to ${MAX_DEADLINE_SECONDS}`,
    );
  return v;
}

const fail = (message: string, node: string): never => {
  throw bad(message, node);
};

function checkDependencies(
  n: NodeDef,
  byKey: ReadonlyMap<string, NodeDef>,
  present: ReadonlySet<string>,
): void {
  for (const d of n.depends_on) {
    if (d === n.key) throw bad('depends on itself', n.key);
    const dep = byKey.get(d);
    if (!dep) {
      if (present.has(d)) continue; // that node has a problem of its own
      throw bad(`depends_on names ${d}, which is not a node`, n.key);
    }
    const [mine, theirs] = [phaseOf(n), phaseOf(dep)];
    if (mine !== theirs)
      throw bad(
        mine === 'main'
          ? `depends on ${d}, ${theirs === 'handler' ? 'an on_failure' : 'a finally'} node`
          : `${mine === 'handler' ? 'an on_failure' : 'a finally'} node may depend only on other ${mine === 'handler' ? 'on_failure' : 'finally'} nodes (not ${d})`,
        n.key,
      );
  }
}

function nodeKey(n: unknown): string | undefined {
  return isObject(n) && typeof n.key === 'string' ? n.key : undefined;
}

const BASE_FIELDS = ['key', 'depends_on', 'trigger_rule', 'on_failure', 'finally', 'optional'];
const KIND_FIELDS = Object.values(NODE_KINDS).flatMap((k) => k.fields);
const KIND_NAMES = Object.keys(NODE_KINDS)
  .join(', ')
  .replace(/, (?=[^,]*$)/, ' and ');

function parseNode(raw: unknown, i: number, ctx: DefinitionContext): NodeDef {
  if (!isObject(raw)) throw bad(`nodes[${i}] is not an object`);
  const key = raw.key;
  if (typeof key !== 'string' || !KEY.test(key))
    throw bad(
      `nodes[${i}].key must be 1 to 64 of letters, digits, "_" and "-", starting with a letter`,
      typeof key === 'string' ? key : undefined,
    );
  const unknown = Object.keys(raw).filter(
    (k) => !BASE_FIELDS.includes(k) && !KIND_FIELDS.includes(k),
  );
  if (unknown.length) throw bad(`unknown field ${unknown[0]}`, key);
  const {
    depends_on = [],
    trigger_rule = 'all_success',
    on_failure = false,
    finally: fin = false,
    optional = false,
  } = raw;
  if (!strings(depends_on)) throw bad('depends_on must be a list of node keys', key);
  if (!TRIGGER_RULES.includes(trigger_rule as TriggerRule))
    throw bad(`trigger_rule must be one of ${TRIGGER_RULES.join(', ')}`, key);
  if (typeof on_failure !== 'boolean') throw bad('on_failure must be a boolean', key);
  const finallyOf = readFinally(fin, key);
  if (typeof optional !== 'boolean') throw bad('optional must be a boolean', key);
  if (finallyOf && on_failure)
    throw bad('a node is a finally node or an on_failure node, not both', key);
  if (optional && (finallyOf || on_failure))
    throw bad(
      'optional is for nodes of the run itself: handlers and finally nodes never fail it',
      key,
    );
  const kinds = Object.values(NODE_KINDS).filter((k) => k.present(raw));
  if (kinds.length !== 1) throw bad(`a node has exactly one of ${KIND_NAMES}`, key);
  const [kind] = kinds;
  const base: NodeBase = {
    key,
    depends_on: [...new Set(depends_on)],
    trigger_rule: trigger_rule as TriggerRule,
    on_failure,
    ...(finallyOf ? { finally: finallyOf } : {}),
    ...(optional ? { optional: true as const } : {}),
  };
  const node = kind.parse(raw, base, ctx);
  // After the kind's own checks, so a node's own problems are named first.
  const foreign = Object.keys(raw).find((k) => KIND_FIELDS.includes(k) && !kind.fields.includes(k));
  if (foreign === 'for_each' || foreign === 'concurrency')
    throw bad('for_each goes with a task node', key);
  return node;
}

/** `finally: true` (also on a cancelled run), `{on_cancel: false}`, or false/absent. */
function readFinally(raw: unknown, key: string): { on_cancel: boolean } | undefined {
  if (raw === false) return undefined;
  if (raw === true) return { on_cancel: true };
  if (isObject(raw) && Object.keys(raw).every((k) => k === 'on_cancel')) {
    const onCancel = raw.on_cancel ?? true;
    if (typeof onCancel === 'boolean') return { on_cancel: onCancel };
  }
  throw bad('finally must be true, false or {on_cancel: true|false}', key);
}

function checkAcyclic(nodes: readonly NodeDef[], byKey: ReadonlyMap<string, NodeDef>): void {
  const state = new Map<string, 'open' | 'done'>();
  const visit = (n: NodeDef): void => {
    state.set(n.key, 'open');
    for (const d of n.depends_on) {
      const s = state.get(d);
      if (s === 'open') throw bad(`depends_on ${d} closes a cycle`, n.key);
      if (s === undefined) visit(byKey.get(d) as NodeDef);
    }
    state.set(n.key, 'done');
  };
  for (const n of nodes) if (!state.has(n.key)) visit(n);
}

/** Each node's ancestors (every node upstream of it). */
export function ancestorSets(
  nodes: readonly NodeDef[],
  byKey: ReadonlyMap<string, NodeDef>,
): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const of = (n: NodeDef): Set<string> => {
    const known = out.get(n.key);
    if (known) return known;
    const set = new Set<string>();
    for (const d of n.depends_on) {
      set.add(d);
      for (const a of of(byKey.get(d) as NodeDef)) set.add(a);
    }
    out.set(n.key, set);
    return set;
  };
  nodes.forEach(of);
  return out;
}

function checkReferences(
  n: NodeDef,
  byKey: ReadonlyMap<string, NodeDef>,
  upstream: ReadonlySet<string>,
  graph: ReadonlySet<string>,
): void {
  const kind = kindSpec(n);
  const forEach = forEachOf(n);
  const afterRun = phaseOf(n) !== 'main';
  for (const path of kind.templates(n).flatMap(placeholderPaths)) {
    // for_each itself is read before there is an item.
    const problem = pathProblem(path, {
      upstream,
      inFork: forEach !== undefined && forEach !== `{{${path}}}`,
      afterRun,
      graph,
    });
    if (problem) throw bad(problem, n.key);
  }
  kind.checkGraph?.(n, byKey);
}
