/** When a node may start, from how its parents ended (Airflow's names and meanings). */
export const TRIGGER_RULES = [
  'all_success',
  'all_failed',
  'all_done',
  'all_skipped',
  'one_success',
  'one_failed',
  'one_done',
  'none_failed',
  'none_failed_min_one_success',
  'none_skipped',
  'always',
] as const;
export type TriggerRule = (typeof TRIGGER_RULES)[number];

/** What every node has, whatever its kind. */
export interface NodeBase {
  key: string;
  depends_on: string[];
  trigger_rule: TriggerRule;
  /** Runs only when the run fails (before any rollback). */
  on_failure: boolean;
  /**
   * A finally-node (exit handler): runs once every other node has ended, whatever the outcome;
   * `on_cancel: false` leaves it out of a cancelled run. Absent on every other node.
   */
  finally?: { on_cancel: boolean };
  /** Its failure is reported on the run but does not fail it. Absent (false) on most nodes. */
  optional?: true;
}

/** Which part of a run a node belongs to: its graph, the failure handlers, or the finally-nodes. */
export type NodePhase = 'main' | 'handler' | 'finally';

export const phaseOf = (n: NodeBase): NodePhase =>
  n.finally ? 'finally' : n.on_failure ? 'handler' : 'main';

/** A task to create (`task`: the `POST /v1/tasks` body, with placeholders), or one per list element. */
export interface TaskNode extends NodeBase {
  task: Record<string, unknown>;
  /** Dynamic fork: one task per element of the list this placeholder gives. */
  for_each?: string;
  /** At most this many of a for_each node's tasks at once. */
  concurrency?: number;
}

/** Chooses the nodes of one case; the others' are SKIPPED. */
export interface SwitchNode extends NodeBase {
  switch: { value: string; cases: Record<string, string[]>; default: string[] };
}

/** Runs another definition as a child run. */
export interface SubTopologyNode extends NodeBase {
  topology: { name: string; version?: number; input: Record<string, unknown> };
}

/** Waits for a signal, until a time, or a number of seconds. */
export interface WaitNode extends NodeBase {
  wait: { signal?: string; until?: string; seconds?: number };
}

/** Waits for a person allowed to approve or reject it, or for its timeout to decide. */
export interface ApprovalNode extends NodeBase {
  approval: {
    timeout_seconds: number;
    on_timeout: 'approve' | 'reject';
    /** What the approver is asked (placeholders allowed). */
    message?: string;
    /** Who may decide (any of): API key names, roles. Absent: any operator or admin. */
    approvers?: { keys: string[]; roles: string[] };
  };
}

/**
 * One node of a definition, as stored and as the evaluator reads it: its kind is the one field of
 * `task`, `switch`, `topology`, `wait` and `approval` it has (the stored JSON is the API's).
 */
export type NodeDef = TaskNode | SwitchNode | SubTopologyNode | WaitNode | ApprovalNode;

export type NodeKind = 'task' | 'switch' | 'topology' | 'wait' | 'approval';

export function kindOf(n: NodeDef): NodeKind {
  if ('task' in n) return 'task';
  if ('switch' in n) return 'switch';
  if ('topology' in n) return 'topology';
  if ('approval' in n) return 'approval';
  return 'wait';
}

/** The list placeholder of a for_each node; undefined for every other node. */
export function forEachOf(n: NodeDef): string | undefined {
  return 'task' in n ? n.for_each : undefined;
}

export interface TopologySpec {
  name: string;
  description: string;
  /** When the run fails, succeeded nodes are rolled back in reverse topological order. */
  rollback_on_failure: boolean;
  /**
   * After the first failure no node of the graph starts any more (handlers and finally-nodes
   * still do); `cancel` also cancels the ones under way. Absent: every branch goes on.
   */
  fail_fast?: true | 'cancel';
  /**
   * How long a run may take, from its start (or from a retry or re-run that reopened it): past
   * it, the graph's nodes under way are cancelled, none starts, and the run fails with reason
   * `deadline` (then handlers, rollback, finally-nodes). A run may set its own.
   */
  deadline_seconds?: number;
  nodes: NodeDef[];
}

/** The longest deadline a run may have: 30 days. */
export const MAX_DEADLINE_SECONDS = 30 * 24 * 3600;

/** What a definition is checked against when it is saved. */
export interface DefinitionContext {
  taskTypes: ReadonlySet<string>;
  topologies: ReadonlySet<string>;
  /**
   * Refuses a node's params that break its type's schema (a ContractException naming the
   * problems); `holes` are the pointers of placeholders, filled at the run.
   */
  checkParams?: (taskType: string, params: unknown, holes: readonly string[]) => void;
}
