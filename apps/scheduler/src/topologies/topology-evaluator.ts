import {
  ENDED,
  NodeRow,
  NodeStatus,
  NodeTask,
  NodeView,
  failedStatus,
  pendingKicks,
  viewOf,
} from './node-state';
import { sagaStep } from './saga';
import { PlaceholderMissing, PlaceholderScope } from './placeholders';
import {
  Evaluation,
  NodeDef,
  SwitchNode,
  TaskNode,
  TopologySpec,
  TriggerRule,
  forEachOf,
  kindSpec,
  switchChoice,
} from './node-kinds';

/** What the evaluator knows of the run besides its nodes. */
export interface RunContext {
  runId: string;
  name: string;
  version: number;
  input: Record<string, unknown>;
  paused: boolean;
  cancelling: boolean;
  now: number;
}

/** A task (or child run) to create for a node: rendered, made in one transaction with its row. */
export interface NodeStart {
  key: string;
  item: number;
  kind: 'task' | 'topology';
  body: Record<string, unknown>;
}

/** A node whose kept task runs again (a retried run): its row moves from dormant to rerun. */
export interface NodeRerun {
  key: string;
  item: number;
  taskId: string;
  /** The attempt the task is at: the re-run is under way once it is past it. */
  from: number;
  params: Record<string, unknown> | undefined;
}

/** What one evaluation decided; applying it twice does nothing more (rows are keyed). */
export interface Plan {
  starts: NodeStart[];
  /**
   * Rows without a new task: skips, switch choices, waits, lists read, failures to start. With
   * `from`, the row is there in that state and moves; without, it is new.
   */
  rows: (Pick<NodeRow, 'key' | 'item' | 'state' | 'result'> & { from?: NodeRow['state'] })[];
  reruns: NodeRerun[];
  /** Re-runs decided before whose call did not go out (a crash between): ask again. */
  kicks: { taskId: string; from: number; params: Record<string, unknown> | undefined }[];
  /** Active node tasks to cancel (the run is being cancelled). */
  cancel: string[];
  /** Succeeded node tasks to roll back now (a failed run whose definition asks for it). */
  rollbacks: { row: NodeRow; taskId: string }[];
  /** The run is over. */
  finish?: { outcome: 'SUCCESS' | 'FAIL' | 'CANCELLED'; error: string | null };
  /** The earliest time a wait ends, to look again then. */
  wakeAt?: number;
}

/** The nodes' views, keyed, from the stored rows and tasks. */
export function viewsOf(
  spec: TopologySpec,
  rows: readonly NodeRow[],
  tasks: ReadonlyMap<string, NodeTask>,
): Map<string, NodeView> {
  const byNode = new Map<string, NodeRow[]>();
  for (const r of rows) {
    const list = byNode.get(r.key);
    if (list) list.push(r);
    else byNode.set(r.key, [r]);
  }
  return new Map(spec.nodes.map((n) => [n.key, viewOf(n, byNode.get(n.key) ?? [], tasks)]));
}

/** Nodes in an order where each comes after its parents. */
export function topologicalOrder(spec: TopologySpec): NodeDef[] {
  const byKey = new Map(spec.nodes.map((n) => [n.key, n]));
  const out: NodeDef[] = [];
  const seen = new Set<string>();
  const visit = (n: NodeDef): void => {
    if (seen.has(n.key)) return;
    seen.add(n.key);
    n.depends_on.forEach((d) => visit(byKey.get(d) as NodeDef));
    out.push(n);
  };
  spec.nodes.forEach(visit);
  return out;
}

/** Whether a rule is met (run), can never be (skip), or needs more parents to end (wait). */
export function ruleVerdict(rule: TriggerRule, parents: NodeStatus[]): 'run' | 'skip' | 'wait' {
  if (parents.length === 0) return 'run';
  const ended = parents.filter((s) => ENDED.has(s));
  const all = ended.length === parents.length;
  const ok = parents.filter((s) => s === 'SUCCESS').length;
  const failed = parents.filter(failedStatus).length;
  switch (rule) {
    case 'all_success':
      if (ok === parents.length) return 'run';
      return ended.length > ok ? 'skip' : 'wait';
    case 'all_done':
      return all ? 'run' : 'wait';
    case 'one_success':
      return ok > 0 ? 'run' : all ? 'skip' : 'wait';
    case 'one_failed':
      return failed > 0 ? 'run' : all ? 'skip' : 'wait';
  }
}

/**
 * Decides what the run does next from what is stored: which nodes start, which are skipped, what
 * a switch chooses, how many more of a for_each list start, whether the run is over. Pure: the
 * same state gives the same plan, so an evaluation repeated after a crash adds nothing.
 */
export function evaluate(
  spec: TopologySpec,
  run: RunContext,
  rows: readonly NodeRow[],
  tasks: ReadonlyMap<string, NodeTask>,
): Plan {
  const views = viewsOf(spec, rows, tasks);
  const plan: Plan = { starts: [], rows: [], reruns: [], kicks: [], cancel: [], rollbacks: [] };
  const dormant = new Map(
    rows.filter((r) => r.state === 'dormant').map((r) => [`${r.key}:${r.item}`, r]),
  );
  const scope = (extra?: Partial<PlaceholderScope>): PlaceholderScope => ({
    input: run.input,
    run: { id: run.runId, name: run.name, version: run.version },
    nodes: Object.fromEntries(
      [...views.values()].map((v) => [
        v.key,
        { status: v.status, result: v.result, task_id: v.task?.taskId ?? null },
      ]),
    ),
    ...extra,
  });
  const set = (key: string, status: NodeStatus, result: unknown = null): void => {
    const v = views.get(key) as NodeView;
    views.set(key, { ...v, status, result });
  };
  const record = (
    n: NodeDef,
    item: number,
    state: NodeRow['state'],
    result: Record<string, unknown> | null,
  ): void => {
    const was = dormant.has(`${n.key}:${item}`) ? ('dormant' as const) : undefined;
    plan.rows.push({ key: n.key, item, state, result, ...(was ? { from: was } : {}) });
  };
  /** Starts the task of a node (item): a new one, or the kept one of a dormant row again. */
  const startTask = (n: TaskNode, item: number, body: Record<string, unknown>): void => {
    const kept = dormant.get(`${n.key}:${item}`);
    const task = kept?.taskId ? tasks.get(kept.taskId) : undefined;
    if (kept && task)
      plan.reruns.push({
        key: n.key,
        item,
        taskId: task.taskId,
        from: task.attempt,
        params: body.params as Record<string, unknown> | undefined,
      });
    else plan.starts.push({ key: n.key, item, kind: 'task', body });
  };

  if (run.cancelling) {
    const active = [...views.values()]
      .flatMap((v) => [v.task, ...v.items.map((i) => i.task)])
      .filter((t): t is NodeTask => t !== undefined && t.status !== 'FINISH');
    plan.cancel = active.filter((t) => !t.cancelRequested).map((t) => t.taskId);
    if (active.length === 0) plan.finish = { outcome: 'CANCELLED', error: 'cancelled' };
    return plan;
  }
  if (run.paused) return plan;
  plan.kicks = pendingKicks(rows, tasks);

  const chosenBy = switchChoices(spec, views);
  const evaluation: Evaluation = {
    run,
    plan,
    scope,
    view: (key) => views.get(key) as NodeView,
    setView: (key, view) => views.set(key, view),
    set,
    record,
    startTask,
    choose: (n, label) => chosenBy.set(n.key, switchChoice(n as SwitchNode, label)),
  };
  const pass = (nodes: readonly NodeDef[]): void => {
    for (const n of nodes) {
      const v = views.get(n.key) as NodeView;
      if (v.status === 'PENDING') decide(n, v);
      const now = views.get(n.key) as NodeView;
      if (now.status === 'ACTIVE') kindSpec(n).advance?.(n, now, evaluation);
    }
  };
  const decide = (n: NodeDef, v: NodeView): void => {
    // A node a person skipped lets its dependants go on, as if it succeeded.
    const parents = n.depends_on.map((d) => {
      const p = views.get(d) as NodeView;
      return p.manual ? 'SUCCESS' : p.status;
    });
    let verdict = ruleVerdict(n.trigger_rule, parents);
    for (const d of n.depends_on) {
      const chosen = chosenBy.get(d);
      if (verdict !== 'wait' && chosen?.listed.has(n.key) && !chosen.taken?.has(n.key))
        verdict = 'skip';
    }
    if (verdict === 'wait') return;
    if (verdict === 'skip') {
      record(n, forEachOf(n) !== undefined ? -1 : 0, 'skipped', null);
      set(n.key, 'SKIPPED');
      return;
    }
    try {
      kindSpec(n).start(n, v, evaluation);
    } catch (err) {
      if (!(err instanceof PlaceholderMissing)) throw err;
      record(n, forEachOf(n) !== undefined ? -1 : 0, 'failed', { error: err.message });
      set(n.key, 'FAILED', { error: err.message });
    }
  };
  const order = topologicalOrder(spec);
  const main = order.filter((n) => !n.on_failure);
  pass(main);
  const mainViews = main.map((n) => views.get(n.key) as NodeView);
  if (!mainViews.every((v) => ENDED.has(v.status))) return plan;
  const unhandled = mainViews.find(
    (v) =>
      failedStatus(v.status) &&
      !main.some(
        (d) => d.depends_on.includes(v.key) && (views.get(d.key) as NodeView).status !== 'SKIPPED',
      ),
  );
  if (!unhandled) {
    plan.finish = { outcome: 'SUCCESS', error: null };
    return plan;
  }
  const handlers = order.filter((n) => n.on_failure);
  pass(handlers);
  if (!handlers.every((n) => ENDED.has((views.get(n.key) as NodeView).status))) return plan;
  const cause = failureOf(mainViews.find((v) => v.status === 'FAILED') ?? unhandled);
  if (!spec.rollback_on_failure) {
    plan.finish = { outcome: 'FAIL', error: cause };
    return plan;
  }
  // Saga: what succeeded is undone, latest first, before the run ends.
  const saga = sagaStep(main, rows, tasks);
  plan.rollbacks = saga.now;
  if (saga.done)
    plan.finish = {
      outcome: 'FAIL',
      error: `${cause}; rolled back ${saga.rolledBack} node task(s)${saga.notes.length ? `, not ${saga.notes.join(', ')}` : ''}`,
    };
  return plan;
}

function failureOf(v: NodeView): string {
  const why =
    v.task?.error?.message ??
    (typeof (v.result as { error?: unknown } | null)?.error === 'string'
      ? (v.result as { error: string }).error
      : v.count !== undefined
        ? `${(v.result as { failed: number }).failed} of ${v.count} items failed`
        : 'failed');
  return `node ${v.key} failed: ${why}`;
}

type Choice = ReturnType<typeof switchChoice>;

function switchChoices(
  spec: TopologySpec,
  views: ReadonlyMap<string, NodeView>,
): Map<string, Choice> {
  const out = new Map<string, Choice>();
  for (const n of spec.nodes) {
    if (!('switch' in n)) continue;
    const row = views.get(n.key)?.row;
    out.set(
      n.key,
      switchChoice(n, row?.state === 'switched' ? String(row.result?.value) : undefined),
    );
  }
  return out;
}
