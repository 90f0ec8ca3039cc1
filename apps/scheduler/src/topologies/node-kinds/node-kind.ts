import { NodeRow, NodeStatus, NodeView } from '../node-state';
import { PlaceholderScope } from '../placeholders';
import type { Plan, RunContext } from '../topology-evaluator';
import { DefinitionContext, NodeBase, NodeDef, NodeKind, TaskNode } from './node-def';

/** What a kind's evaluation may read and decide, inside one evaluation of a run. */
export interface Evaluation {
  readonly run: RunContext;
  readonly plan: Plan;
  /** The placeholders' values now (`extra`: a for_each item and its index). */
  scope(extra?: Partial<PlaceholderScope>): PlaceholderScope;
  view(key: string): NodeView;
  setView(key: string, view: NodeView): void;
  /** The node's status (and result) as the rest of this evaluation sees it. */
  set(key: string, status: NodeStatus, result?: unknown): void;
  /** A row without a task: stored with the plan. */
  record(
    n: NodeDef,
    item: number,
    state: NodeRow['state'],
    result: Record<string, unknown> | null,
  ): void;
  /** Starts the task of a node (item): a new one, or the kept one of a dormant row again. */
  startTask(n: TaskNode, item: number, body: Record<string, unknown>): void;
  /** A switch chose the case `label`: the nodes of the other cases are skipped. */
  choose(n: NodeDef, label: string): void;
}

/**
 * One kind of node: how its fields are read from a definition, which of them carry placeholders,
 * and what it does when its trigger rule lets it start. Adding a kind is a file like this one and
 * a line in the registry (index.ts).
 */
export interface NodeKindSpec<N extends NodeDef> {
  readonly kind: NodeKind;
  /** The node's own fields in a definition, besides those every node has. */
  readonly fields: readonly string[];
  /** Whether `raw` (a node of a definition) is of this kind: it has this kind's main field. */
  present(raw: Record<string, unknown>): boolean;
  /** Reads and checks the kind's fields; throws a refusal naming the node. */
  parse(raw: Record<string, unknown>, base: NodeBase, ctx: DefinitionContext): N;
  /** The parts of the node that may hold placeholders. */
  templates(n: N): unknown[];
  /** Checks against the other nodes, once the graph is sound. */
  checkGraph?(n: N, byKey: ReadonlyMap<string, NodeDef>): void;
  /** The node's trigger rule let it start. A missing placeholder throws PlaceholderMissing. */
  start(n: N, v: NodeView, e: Evaluation): void;
  /** At each pass while the node is active: its own progress (a fork's next items, a wait's end). */
  advance?(n: N, v: NodeView, e: Evaluation): void;
}
