import { CANCELLED_OUTCOME, TaskOutcome, TaskStatus } from '@baton/task-contract';
import { NodeDef, forEachOf, kindOf } from './node-kinds';

/**
 * What is stored of a node of a run: one row per decision, keyed (run, node, item). `item` is 0
 * for a node's task, -1 for a for_each node's own row (the list's length) and 0..n-1 for its
 * tasks. A row with a task is written in the same transaction as the task (so each is made once).
 */
export type NodeRowState =
  /** A task (or a child run's centre task) was created for it: its status is the task's. */
  | 'task'
  /** Its trigger rule can never be met, or a switch took another branch. */
  | 'skipped'
  /** A switch that chose its case (`result`: value, case, nodes). */
  | 'switched'
  /** A for_each node whose list was read (`result.count`). */
  | 'forked'
  /** A wait node waiting (`result.until` or `result.signal`). */
  | 'waiting'
  /** A wait node whose time came or whose signal arrived (`result`: the signal's data). */
  | 'done'
  /** Could not start: a placeholder without a value, a list too long (`result.error`). */
  | 'failed'
  /** Not run because a node it needs failed (or was itself upstream-failed). */
  | 'upstream_failed'
  /** Never started: the run was cancelled, or failed fast (`result.reason`). */
  | 'cancelled'
  /**
   * Its task is kept to run again (a retry of the run, a re-run from this node): the node is
   * decided again, and when it starts, its task is re-run instead of a new one made.
   */
  | 'dormant'
  /** Its task is being re-run from attempt `result.from` (with `result.params`). */
  | 'rerun';

export interface NodeRow {
  key: string;
  item: number;
  state: NodeRowState;
  taskId: string | null;
  result: Record<string, unknown> | null;
  createdAt: number;
  updatedAt: number;
}

/** A node task as the run needs it. */
export interface NodeTask {
  taskId: string;
  status: TaskStatus;
  outcome: TaskOutcome | null;
  result: Record<string, unknown> | null;
  error: { message: string; code?: string | null } | null;
  attempt: number;
  progress: { percent: number; step: string | null; message: string | null } | null;
  startedAt: number | null;
  finishedAt: number | null;
  cancelRequested: boolean;
  /** A re-run or rollback asked for and not yet begun. */
  pendingAction: string | null;
}

/** What the run needs of a stored task. */
export const toNodeTask = (t: NodeTask): NodeTask => ({
  taskId: t.taskId,
  status: t.status,
  outcome: t.outcome,
  result: t.result,
  error: t.error,
  attempt: t.attempt,
  progress: t.progress,
  startedAt: t.startedAt,
  finishedAt: t.finishedAt,
  cancelRequested: t.cancelRequested,
  pendingAction: t.pendingAction,
});

/** A node's status in a run, every one of them. */
export const NODE_STATUSES = [
  'PENDING',
  'ACTIVE',
  'SUCCESS',
  'FAILED',
  'UPSTREAM_FAILED',
  'CANCELLED',
  'SKIPPED',
  'ROLLED_BACK',
] as const;
export type NodeStatus = (typeof NODE_STATUSES)[number];

export const ENDED: ReadonlySet<NodeStatus> = new Set([
  'SUCCESS',
  'FAILED',
  'UPSTREAM_FAILED',
  'CANCELLED',
  'SKIPPED',
  'ROLLED_BACK',
]);

/**
 * A node that ended without doing its work, as its dependants' rules count it: failed, not run
 * because of a failure, cancelled, or rolled back (it undid what it did).
 */
export const failedStatus = (s: NodeStatus): boolean =>
  s === 'FAILED' || s === 'UPSTREAM_FAILED' || s === 'CANCELLED' || s === 'ROLLED_BACK';

export interface NodeView {
  key: string;
  status: NodeStatus;
  /** What placeholders read as `nodes.<key>.result`. */
  result: unknown;
  /** The task of a task or topology node (item 0); none for a for_each node. */
  task: NodeTask | undefined;
  row: NodeRow | undefined;
  /** A for_each node's tasks, by item. */
  items: { row: NodeRow; task: NodeTask | undefined; status: NodeStatus }[];
  /** A for_each node: the list's length (once read). */
  count: number | undefined;
  /** Skipped by a person: its dependants go on as if it succeeded. */
  manual: boolean;
}

/** The status of one task-backed row. */
export function taskStatus(task: NodeTask | undefined): NodeStatus {
  if (!task) return 'ACTIVE'; // a row whose task was purged reads as still there
  if (task.status !== TaskStatus.FINISH) return 'ACTIVE';
  if (task.outcome === TaskStatus.ROLLBACK) return 'ROLLED_BACK';
  if (task.outcome === CANCELLED_OUTCOME) return 'CANCELLED';
  return task.outcome === TaskStatus.SUCCESS ? 'SUCCESS' : 'FAILED';
}

/** Whether a row in 'rerun' still waits for its re-run to begin (the task at the old attempt). */
export function rerunPending(row: NodeRow, task: NodeTask | undefined): boolean {
  return (
    row.state === 'rerun' && task !== undefined && task.attempt <= Number(row.result?.from ?? 0)
  );
}

/**
 * Re-runs decided before whose call did not go out (a crash between, a refusal): to ask again,
 * each only from the attempt its row names.
 */
export function pendingKicks(
  rows: readonly NodeRow[],
  tasks: ReadonlyMap<string, NodeTask>,
): { taskId: string; from: number; params: Record<string, unknown> | undefined }[] {
  const out = [];
  for (const r of rows) {
    const t = r.taskId ? tasks.get(r.taskId) : undefined;
    if (rerunPending(r, t) && t?.status === TaskStatus.FINISH && t.pendingAction === null)
      out.push({
        taskId: t.taskId,
        from: Number(r.result?.from ?? 0),
        params: r.result?.params as Record<string, unknown> | undefined,
      });
  }
  return out;
}

function rowStatus(row: NodeRow, tasks: ReadonlyMap<string, NodeTask>): NodeStatus {
  switch (row.state) {
    case 'task':
      return taskStatus(tasks.get(row.taskId as string));
    case 'rerun': {
      const task = tasks.get(row.taskId as string);
      return rerunPending(row, task) ? 'ACTIVE' : taskStatus(task);
    }
    case 'dormant':
      return 'PENDING';
    case 'skipped':
      return 'SKIPPED';
    case 'failed':
      return 'FAILED';
    case 'upstream_failed':
      return 'UPSTREAM_FAILED';
    case 'cancelled':
      return 'CANCELLED';
    case 'waiting':
      return 'ACTIVE';
    default:
      return 'SUCCESS';
  }
}

/** The view of one node from its rows (`rows` holds only this node's) and the run's tasks. */
export function viewOf(
  def: NodeDef,
  rows: readonly NodeRow[],
  tasks: ReadonlyMap<string, NodeTask>,
): NodeView {
  const forEach = forEachOf(def);
  const own = rows.find((r) => r.item === (forEach !== undefined ? -1 : 0));
  const view: NodeView = {
    key: def.key,
    status: 'PENDING',
    result: null,
    task: undefined,
    row: own,
    items: [],
    count: undefined,
    manual: false,
  };
  if (!own || own.state === 'dormant') return view;
  view.manual = own.state === 'skipped' && own.result?.by === 'api';
  if (forEach === undefined || own.state !== 'forked') {
    view.status = rowStatus(own, tasks);
    // A node decided not to run keeps the task of an earlier attempt on its row: not shown.
    const stale = own.state === 'upstream_failed' || own.state === 'cancelled';
    view.task = own.taskId && !stale ? tasks.get(own.taskId) : undefined;
    view.result =
      kindOf(def) === 'task' || kindOf(def) === 'topology'
        ? (view.task?.result ?? null)
        : own.result;
    return view;
  }
  const count = Number(own.result?.count ?? 0);
  view.count = count;
  view.items = rows
    .filter((r) => r.item >= 0 && r.state !== 'dormant')
    .sort((a, b) => a.item - b.item)
    .map((row) => {
      const task = row.taskId ? tasks.get(row.taskId) : undefined;
      return { row, task, status: rowStatus(row, tasks) };
    });
  const ended = view.items.filter((i) => ENDED.has(i.status));
  const tally = (...of: NodeStatus[]) => ended.filter((i) => of.includes(i.status)).length;
  const failed = tally('FAILED', 'UPSTREAM_FAILED');
  const cancelled = tally('CANCELLED');
  const rolledBack = tally('ROLLED_BACK');
  // A fork stopped by fail-fast starts no more of its items: it ends with the ones it started.
  const unstarted = typeof own.result?.stopped === 'string' ? count - view.items.length : 0;
  view.status =
    ended.length < count - unstarted
      ? 'ACTIVE'
      : failed > 0
        ? 'FAILED'
        : cancelled + unstarted > 0
          ? 'CANCELLED'
          : rolledBack > 0
            ? 'ROLLED_BACK'
            : ('SUCCESS' as NodeStatus);
  view.result = {
    count,
    succeeded: tally('SUCCESS'),
    failed,
    ...(cancelled + unstarted > 0 ? { cancelled: cancelled + unstarted } : {}),
    ...(rolledBack > 0 ? { rolled_back: rolledBack } : {}),
    results: view.items.length <= 1000 ? view.items.map((i) => i.task?.result ?? null) : null,
  };
  return view;
}

/** How many nodes are in each status (a finished run's result). */
export function statusCounts(views: Iterable<NodeView>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of views) out[v.status] = (out[v.status] ?? 0) + 1;
  return out;
}

/** Whether two reads of a run's rows found the same rows in the same states. */
export function sameRows(a: readonly NodeRow[], b: readonly NodeRow[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (x.key !== y.key || x.item !== y.item || x.state !== y.state || x.taskId !== y.taskId)
      return false;
    if (x.updatedAt !== y.updatedAt) return false;
  }
  return true;
}
