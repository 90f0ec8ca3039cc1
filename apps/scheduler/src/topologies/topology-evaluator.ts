import {
  ENDED,
  NodeRow,
  NodeStatus,
  NodeTask,
  NodeView,
  pendingKicks,
  statusCounts,
  viewOf,
} from './node-state';
import { sagaStep } from './saga';
import { RunFailure, failureMessage, hardFailure, nodeError } from './run-outcome';
import { ruleVerdict } from './trigger-rules';

export { ruleVerdict, type Verdict } from './trigger-rules';
export { nodeError } from './run-outcome';
import { PlaceholderMissing, PlaceholderScope } from './placeholders';
import {
  Evaluation,
  NodeDef,
  SwitchNode,
  TaskNode,
  TopologySpec,
  forEachOf,
  kindSpec,
  phaseOf,
  switchChoice,
} from './node-kinds';

export type { NodeRerun, NodeStart, Plan, RunContext } from './evaluation-plan';
import type { Plan, RunContext } from './evaluation-plan';

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

/**
 * Decides what the run does next from what is stored: which nodes start, which are skipped, what
 * a switch chooses, how many more of a for_each list start, whether the run is over. Pure: the
 * same state gives the same plan, so an evaluation repeated after a crash adds nothing.
 *
 * A run has three phases, each a graph of its own: its nodes, then (when a node failed) the
 * failure handlers and the rollback, then the finally-nodes, which run whatever the outcome.
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
  const order = topologicalOrder(spec);
  const main = order.filter((n) => phaseOf(n) === 'main');
  const handlers = order.filter((n) => phaseOf(n) === 'handler');
  const finals = order.filter((n) => phaseOf(n) === 'finally');
  const view = (key: string): NodeView => views.get(key) as NodeView;
  /** The run's failure as handlers and finally-nodes read it; none while nodes still run. */
  let failure: RunFailure | undefined;
  let outcome: 'SUCCESS' | 'FAIL' | 'CANCELLED' | undefined;
  const scope = (extra?: Partial<PlaceholderScope>): PlaceholderScope => ({
    input: run.input,
    run: {
      id: run.runId,
      name: run.name,
      version: run.version,
      ...(outcome
        ? {
            outcome,
            error: failure?.error ?? null,
            failed_nodes: failure?.nodes ?? [],
          }
        : {}),
    },
    nodes: Object.fromEntries(
      [...views.values()].map((v) => [
        v.key,
        {
          status: v.status,
          result: v.result,
          task_id: v.task?.taskId ?? null,
          error: nodeError(v),
        },
      ]),
    ),
    ...extra,
  });
  const set = (key: string, status: NodeStatus, result: unknown = null): void => {
    views.set(key, { ...view(key), status, result });
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
  /** A node ended without running (or an active one stops starting what it has not started). */
  const stop = (n: NodeDef, state: 'cancelled' | 'skipped', reason: string): void => {
    const v = view(n.key);
    const fork = forEachOf(n) !== undefined;
    if (v.status === 'PENDING') {
      record(n, fork ? -1 : 0, state, { reason });
      set(n.key, state === 'cancelled' ? 'CANCELLED' : 'SKIPPED');
    } else if (v.status === 'ACTIVE' && fork && v.row?.state === 'forked') {
      if (typeof v.row.result?.stopped !== 'string')
        plan.rows.push({
          key: n.key,
          item: -1,
          state: 'forked',
          result: { ...v.row.result, stopped: reason },
          from: 'forked',
        });
    } else if (v.status === 'ACTIVE' && v.row?.state === 'waiting') {
      plan.rows.push({
        key: n.key,
        item: 0,
        state,
        result: { ...v.row.result, reason },
        from: 'waiting',
      });
      set(n.key, state === 'cancelled' ? 'CANCELLED' : 'SKIPPED');
    }
  };
  /** The unfinished tasks of these nodes. */
  const activeTasks = (nodes: readonly NodeDef[]): NodeTask[] =>
    nodes
      .map((n) => view(n.key))
      .flatMap((v) => [v.task, ...v.items.map((i) => i.task)])
      .filter((t): t is NodeTask => t !== undefined && t.status !== 'FINISH');
  const ended = (nodes: readonly NodeDef[]): boolean =>
    nodes.every((n) => ENDED.has(view(n.key).status));

  if (run.rollingBack) {
    // Undone with its parent: nothing starts; what succeeded is rolled back, latest first.
    const saga = sagaStep(main, rows, tasks);
    plan.rollbacks = saga.now;
    if (saga.done)
      plan.finish = {
        outcome: 'ROLLBACK',
        error: saga.notes.length
          ? `rolled back ${saga.rolledBack} node task(s), not ${saga.notes.join(', ')}`
          : null,
        counts: statusCounts(views.values()),
      };
    return plan;
  }
  if (run.paused && !run.cancelling) return plan;
  // While cancelling only the finally-nodes' re-runs are asked again (they still run).
  const finalKeys = new Set(finals.map((n) => n.key));
  plan.kicks = pendingKicks(
    run.cancelling ? rows.filter((r) => finalKeys.has(r.key)) : rows,
    tasks,
  );

  const chosenBy = switchChoices(spec, views);
  const evaluation: Evaluation = {
    run,
    plan,
    scope,
    view,
    setView: (key, v) => views.set(key, v),
    set,
    record,
    startTask,
    choose: (n, label) => chosenBy.set(n.key, switchChoice(n as SwitchNode, label)),
  };
  /** Set once a node of the graph failed and the definition fails fast. */
  let failingFast = false;
  const failFast = (): boolean => {
    if (failingFast || !spec.fail_fast) return failingFast;
    failingFast = main.some((n) => !n.optional && hardFailure(view(n.key).status));
    return failingFast;
  };
  const pass = (nodes: readonly NodeDef[]): void => {
    for (const n of nodes) {
      if (phaseOf(n) === 'main' && failFast()) break;
      if (view(n.key).status === 'PENDING') decide(n, view(n.key));
      const now = view(n.key);
      if (now.status === 'ACTIVE') kindSpec(n).advance?.(n, now, evaluation);
    }
  };
  const decide = (n: NodeDef, v: NodeView): void => {
    // A node a person skipped lets its dependants go on, as if it succeeded.
    const parents = n.depends_on.map((d) => (view(d).manual ? 'SUCCESS' : view(d).status));
    let verdict = ruleVerdict(n.trigger_rule, parents);
    for (const d of n.depends_on) {
      const chosen = chosenBy.get(d);
      // Only a switch that chose skips the other cases; one that failed or was skipped passes
      // that on through the rules.
      if (
        verdict === 'run' &&
        chosen?.taken &&
        chosen.listed.has(n.key) &&
        !chosen.taken.has(n.key)
      )
        verdict = 'skip';
    }
    if (verdict === 'wait') return;
    if (verdict === 'skip' || verdict === 'upstream_failed') {
      const upstream = verdict === 'upstream_failed';
      record(
        n,
        forEachOf(n) !== undefined ? -1 : 0,
        upstream ? 'upstream_failed' : 'skipped',
        null,
      );
      set(n.key, upstream ? 'UPSTREAM_FAILED' : 'SKIPPED');
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
  /** The finally-nodes, once the rest has ended; then the run is over. */
  const close = (f: NonNullable<Plan['finish']> & { outcome: typeof outcome }): Plan => {
    outcome = f.outcome;
    failure =
      f.outcome === 'SUCCESS' ? undefined : { error: f.error ?? '', nodes: f.failedNodes ?? [] };
    if (f.outcome === 'CANCELLED')
      for (const n of finals) if (!n.finally?.on_cancel) stop(n, 'skipped', 'cancelled');
    pass(finals);
    if (!ended(finals)) return plan;
    const finallyFailed = finals.filter((n) => hardFailure(view(n.key).status)).map((n) => n.key);
    plan.finish = {
      ...f,
      ...(finallyFailed.length ? { finallyFailed } : {}),
      counts: statusCounts(views.values()),
    };
    return plan;
  };

  if (run.cancelling) {
    // No node of the graph or handler starts any more; those under way are cancelled. The
    // finally-nodes run once they have all ended.
    for (const n of [...main, ...handlers]) stop(n, 'cancelled', 'cancelled');
    const active = activeTasks([...main, ...handlers]);
    plan.cancel = active.filter((t) => !t.cancelRequested).map((t) => t.taskId);
    if (active.length > 0) return plan;
    // What had failed before the cancel is still told.
    const failedBefore = main.filter(
      (n) => !n.optional && ['FAILED', 'UPSTREAM_FAILED'].includes(view(n.key).status),
    );
    return close({
      outcome: 'CANCELLED',
      error: 'cancelled',
      failedNodes: failedBefore.map((n) => n.key),
    });
  }

  // Past the deadline no node of the graph starts any more and those under way are cancelled;
  // the run then fails as one whose nodes failed does (handlers, rollback, finally-nodes).
  // Once the graph has ended the deadline is over: handlers and finally-nodes are not cut.
  const pastDeadline = run.deadlineAt !== null && run.now >= run.deadlineAt && !ended(main);
  if (pastDeadline) {
    for (const n of main) {
      stop(n, 'cancelled', 'deadline');
      // A node whose task the deadline cancels says so on its row (`cut`), kept for good: what
      // the run's end says does not hang on the time of a later evaluation.
      const row = view(n.key).row;
      const task = view(n.key).task;
      if (
        row &&
        (row.state === 'task' || row.state === 'rerun') &&
        task &&
        task.status !== 'FINISH' &&
        row.result?.cut !== 'deadline'
      )
        plan.rows.push({
          key: n.key,
          item: row.item,
          state: row.state,
          result: { ...row.result, cut: 'deadline' },
          from: row.state,
        });
    }
    plan.cancel = activeTasks(main)
      .filter((t) => !t.cancelRequested)
      .map((t) => t.taskId);
  } else pass(main);
  if (failFast()) {
    for (const n of main) stop(n, 'cancelled', 'fail_fast');
    if (spec.fail_fast === 'cancel')
      plan.cancel = activeTasks(main)
        .filter((t) => !t.cancelRequested)
        .map((t) => t.taskId);
  }
  if (!ended(main)) {
    if (run.deadlineAt !== null && !pastDeadline)
      plan.wakeAt = Math.min(plan.wakeAt ?? Infinity, run.deadlineAt);
    return plan;
  }
  const failed = main.filter((n) => !n.optional && hardFailure(view(n.key).status));
  const optionalFailed = main
    .filter((n) => n.optional && hardFailure(view(n.key).status))
    .map((n) => n.key);
  const extra = optionalFailed.length ? { optionalFailed } : {};
  if (failed.length === 0) {
    // Not needed: the handlers are SKIPPED (one that ran before a retry keeps its task, and its
    // run stays in the history).
    for (const n of handlers) stop(n, 'skipped', 'the run did not fail');
    return close({ outcome: 'SUCCESS', error: null, ...extra });
  }
  // The deadline cut the graph short: a node it stopped (or whose task it cancelled) ended so.
  // Stopped before it started, its fork stopped, or its task cancelled under way: on its row.
  const byDeadline = failed.some((n) => {
    const r = view(n.key).row?.result;
    return r?.reason === 'deadline' || r?.stopped === 'deadline' || r?.cut === 'deadline';
  });
  const cause = `${byDeadline ? "the run's deadline passed: " : ''}${failureMessage(failed.map((n) => view(n.key)))}`;
  const deadline = byDeadline ? { reason: 'deadline' as const } : {};
  const failedNodes = failed.map((n) => n.key);
  outcome = 'FAIL';
  failure = { error: cause, nodes: failedNodes };
  pass(handlers);
  if (!ended(handlers)) return plan;
  if (!spec.rollback_on_failure)
    return close({ outcome: 'FAIL', error: cause, failedNodes, ...extra, ...deadline });
  // Saga: what succeeded is undone, latest first, before the finally-nodes.
  const saga = sagaStep(main, rows, tasks);
  plan.rollbacks = saga.now;
  if (!saga.done) return plan;
  return close({
    outcome: 'FAIL',
    error: `${cause}; rolled back ${saga.rolledBack} node task(s)${saga.notes.length ? `, not ${saga.notes.join(', ')}` : ''}`,
    failedNodes,
    ...extra,
    ...deadline,
  });
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
