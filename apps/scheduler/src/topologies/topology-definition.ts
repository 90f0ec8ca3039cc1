import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { pathProblem, placeholderPaths } from './placeholders';

/** When a node may start, from how its parents ended. */
export const TRIGGER_RULES = ['all_success', 'all_done', 'one_success', 'one_failed'] as const;
export type TriggerRule = (typeof TRIGGER_RULES)[number];

export const MAX_NODES = 1000;
export const MAX_FOR_EACH = 10_000;
export const MAX_DEPTH = 5;
const MAX_WAIT_SECONDS = 30 * 24 * 3600;
const KEY = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
export const TOPOLOGY_NAME = /^[a-z0-9][a-z0-9._-]{0,99}$/;
/** What a node template may not set: the run sets them. */
const RUN_OWNED = ['tenant', 'idempotency_key', 'repetition'];
const RUN_OWNED_INFO = ['parent_task_id', 'control_task_id'];

/** One node of a definition, as stored and as the evaluator reads it. */
export interface NodeDef {
  key: string;
  depends_on: string[];
  trigger_rule: TriggerRule;
  /** A task to create: the `POST /v1/tasks` body, with placeholders. */
  task?: Record<string, unknown>;
  /** Dynamic fork: one task per element of the list this placeholder gives. */
  for_each?: string;
  /** At most this many of a for_each node's tasks at once. */
  concurrency?: number;
  /** Chooses the nodes of one case; the others' are SKIPPED. */
  switch?: { value: string; cases: Record<string, string[]>; default: string[] };
  /** Runs another definition as a child run. */
  topology?: { name: string; version?: number; input: Record<string, unknown> };
  /** Waits for a signal, until a time, or a number of seconds. */
  wait?: { signal?: string; until?: string; seconds?: number };
  /** Runs only when the run fails (before any rollback). */
  on_failure: boolean;
}

export interface TopologySpec {
  name: string;
  description: string;
  /** When the run fails, succeeded nodes are rolled back in reverse topological order. */
  rollback_on_failure: boolean;
  nodes: NodeDef[];
}

export type NodeKind = 'task' | 'switch' | 'topology' | 'wait';

export const kindOf = (n: NodeDef): NodeKind =>
  n.task ? 'task' : n.switch ? 'switch' : n.topology ? 'topology' : 'wait';

/** What a definition is checked against when it is saved. */
export interface DefinitionContext {
  taskTypes: ReadonlySet<string>;
  topologies: ReadonlySet<string>;
}

const bad = (message: string, node?: string): ContractException =>
  new ContractException(
    ContractErrorCode.VALIDATION_FAILED,
    node ? `node ${node}: ${message}` : message,
    node ? { node } : {},
  );

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

const strings = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((x) => typeof x === 'string');

/** One thing wrong with a definition: the node it is about (when it is about one) and what. */
export interface DefinitionProblem {
  node?: string;
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
  const { name, description = '', rollback_on_failure = false, nodes } = body;
  if (typeof name !== 'string' || !TOPOLOGY_NAME.test(name))
    throw bad('name must be 1 to 100 of a-z, 0-9, ".", "_", "-", starting with a letter or digit');
  if (typeof description !== 'string' || description.length > 500)
    throw bad('description must be a string of at most 500 characters');
  if (typeof rollback_on_failure !== 'boolean') throw bad('rollback_on_failure must be a boolean');
  if (!Array.isArray(nodes) || nodes.length === 0) throw bad('nodes must be a non-empty list');
  if (nodes.length > MAX_NODES)
    throw bad(
      `a definition has at most ${MAX_NODES} nodes (this one has ${nodes.length})`,
      nodeKey(nodes[MAX_NODES]),
    );
  const problems: DefinitionProblem[] = [];
  const collect = <T>(check: () => T): T | undefined => {
    try {
      return check();
    } catch (err) {
      if (!(err instanceof ContractException)) throw err;
      const node = (err.data as { node?: string } | null)?.node;
      problems.push(node ? { node, message: err.message } : { message: err.message });
      return undefined;
    }
  };
  const parsed = nodes.flatMap((n, i) => collect(() => parseNode(n, i, ctx)) ?? []);
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
    for (const n of parsed)
      collect(() => checkReferences(n, byKey, ancestors.get(n.key) ?? new Set()));
  }
  if (problems.length) {
    const [first] = problems;
    throw new ContractException(ContractErrorCode.VALIDATION_FAILED, first.message, {
      ...(first.node ? { node: first.node } : {}),
      errors: problems.slice(0, MAX_PROBLEMS),
    });
  }
  return { name, description, rollback_on_failure, nodes: parsed };
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
    if (dep.on_failure !== n.on_failure)
      throw bad(
        n.on_failure
          ? `an on_failure node may depend only on other on_failure nodes (not ${d})`
          : `depends on ${d}, an on_failure node`,
        n.key,
      );
  }
}

function nodeKey(n: unknown): string | undefined {
  return isObject(n) && typeof n.key === 'string' ? n.key : undefined;
}

function parseNode(raw: unknown, i: number, ctx: DefinitionContext): NodeDef {
  if (!isObject(raw)) throw bad(`nodes[${i}] is not an object`);
  const key = raw.key;
  if (typeof key !== 'string' || !KEY.test(key))
    throw bad(
      `nodes[${i}].key must be 1 to 64 of letters, digits, "_" and "-", starting with a letter`,
      typeof key === 'string' ? key : undefined,
    );
  const known = [
    'key',
    'depends_on',
    'trigger_rule',
    'task',
    'for_each',
    'concurrency',
    'switch',
    'topology',
    'wait',
    'on_failure',
  ];
  const unknown = Object.keys(raw).filter((k) => !known.includes(k));
  if (unknown.length) throw bad(`unknown field ${unknown[0]}`, key);
  const { depends_on = [], trigger_rule = 'all_success', on_failure = false } = raw;
  if (!strings(depends_on)) throw bad('depends_on must be a list of node keys', key);
  if (!TRIGGER_RULES.includes(trigger_rule as TriggerRule))
    throw bad(`trigger_rule must be one of ${TRIGGER_RULES.join(', ')}`, key);
  if (typeof on_failure !== 'boolean') throw bad('on_failure must be a boolean', key);
  const kinds = ['task', 'switch', 'topology', 'wait'].filter((k) => raw[k] !== undefined);
  if (kinds.length !== 1)
    throw bad('a node has exactly one of task, switch, topology and wait', key);
  const node: NodeDef = {
    key,
    depends_on: [...new Set(depends_on)],
    trigger_rule: trigger_rule as TriggerRule,
    on_failure,
  };
  if (raw.task !== undefined) node.task = parseTask(raw.task, key, ctx);
  if (raw.switch !== undefined) node.switch = parseSwitch(raw.switch, key);
  if (raw.topology !== undefined) node.topology = parseSub(raw.topology, key, ctx);
  if (raw.wait !== undefined) node.wait = parseWait(raw.wait, key);
  if (raw.for_each !== undefined || raw.concurrency !== undefined) {
    if (!node.task) throw bad('for_each goes with a task node', key);
    if (typeof raw.for_each !== 'string' || !/^\{\{[^{}]+\}\}$/.test(raw.for_each.trim()))
      throw bad('for_each must be one placeholder that gives a list, e.g. {{input.hosts}}', key);
    node.for_each = raw.for_each.trim();
    const c = raw.concurrency ?? MAX_FOR_EACH;
    if (!Number.isInteger(c) || (c as number) < 1 || (c as number) > MAX_FOR_EACH)
      throw bad(`concurrency must be an integer from 1 to ${MAX_FOR_EACH}`, key);
    node.concurrency = c as number;
  }
  return node;
}

function parseTask(t: unknown, key: string, ctx: DefinitionContext): Record<string, unknown> {
  if (!isObject(t)) throw bad('task must be a task body (as POST /v1/tasks takes)', key);
  for (const f of RUN_OWNED) if (t[f] !== undefined) throw bad(`task.${f} is set by the run`, key);
  const info = t.create_info;
  if (!isObject(info) || typeof info.task_type !== 'string')
    throw bad('task.create_info.task_type is required', key);
  for (const f of RUN_OWNED_INFO)
    if (info[f] !== undefined) throw bad(`task.create_info.${f} is set by the run`, key);
  if (!ctx.taskTypes.has(info.task_type))
    throw bad(`task type ${info.task_type} is not registered: no worker has declared it`, key);
  return { ...t, create_info: { task_name: key, ...info } };
}

function parseSwitch(s: unknown, key: string): NodeDef['switch'] {
  if (!isObject(s) || typeof s.value !== 'string' || placeholderPaths(s.value).length === 0)
    throw bad('switch.value must be a placeholder, e.g. {{nodes.check.result.mode}}', key);
  if (!isObject(s.cases) || Object.keys(s.cases).length === 0)
    throw bad('switch.cases must map values to lists of node keys', key);
  for (const [v, ks] of Object.entries(s.cases))
    if (!strings(ks)) throw bad(`switch.cases.${v} must be a list of node keys`, key);
  const dflt = s.default ?? [];
  if (!strings(dflt)) throw bad('switch.default must be a list of node keys', key);
  return { value: s.value, cases: s.cases as Record<string, string[]>, default: dflt };
}

function parseSub(s: unknown, key: string, ctx: DefinitionContext): NodeDef['topology'] {
  if (!isObject(s) || typeof s.name !== 'string')
    throw bad('topology.name must name a definition', key);
  if (!ctx.topologies.has(s.name)) throw bad(`topology ${s.name} is not defined`, key);
  if (s.version !== undefined && (!Number.isInteger(s.version) || (s.version as number) < 1))
    throw bad('topology.version must be a positive integer', key);
  if (s.input !== undefined && !isObject(s.input)) throw bad('topology.input is an object', key);
  return {
    name: s.name,
    ...(s.version !== undefined ? { version: s.version as number } : {}),
    input: (s.input as Record<string, unknown>) ?? {},
  };
}

function parseWait(w: unknown, key: string): NodeDef['wait'] {
  if (!isObject(w)) throw bad('wait must be {signal}, {until} or {seconds}', key);
  const set = ['signal', 'until', 'seconds'].filter((k) => w[k] !== undefined);
  if (set.length !== 1) throw bad('wait has exactly one of signal, until and seconds', key);
  if (w.signal !== undefined && (typeof w.signal !== 'string' || !KEY.test(w.signal)))
    throw bad('wait.signal must be a name of letters, digits, "_" and "-"', key);
  if (
    w.until !== undefined &&
    (typeof w.until !== 'string' ||
      (placeholderPaths(w.until).length === 0 && Number.isNaN(Date.parse(w.until))))
  )
    throw bad('wait.until must be an ISO 8601 time or a placeholder that gives one', key);
  if (
    w.seconds !== undefined &&
    (typeof w.seconds !== 'number' || !(w.seconds >= 0 && w.seconds <= MAX_WAIT_SECONDS))
  )
    throw bad(`wait.seconds must be a number from 0 to ${MAX_WAIT_SECONDS}`, key);
  return w as NodeDef['wait'];
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
): void {
  const templates: unknown[] = [n.task, n.for_each, n.switch?.value, n.topology?.input, n.wait];
  const inFork = n.for_each !== undefined;
  for (const path of templates.flatMap(placeholderPaths)) {
    // for_each itself is read before there is an item.
    const problem = pathProblem(path, { upstream, inFork: inFork && n.for_each !== `{{${path}}}` });
    if (problem) throw bad(problem, n.key);
  }
  if (n.switch) {
    for (const k of [...Object.values(n.switch.cases).flat(), ...n.switch.default]) {
      const target = byKey.get(k);
      if (!target) throw bad(`switch names ${k}, which is not a node`, n.key);
      if (!target.depends_on.includes(n.key))
        throw bad(`switch names ${k}, which does not depend on ${n.key}`, n.key);
    }
  }
}
