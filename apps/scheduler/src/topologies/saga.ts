import { TaskStatus } from '@baton/task-contract';
import { NodeRow, NodeTask } from './node-state';
import { NodeDef, ancestorSets, kindOf } from './topology-definition';

/** A task row's place in the rollback of a failed run. */
type Stage = 'awaiting' | 'in-flight' | 'done' | 'noted' | 'none';

/**
 * Where a node task stands in a saga: `rollback` on its row says the driver asked for it (or why
 * it could not: the type has no rollback). A task asked for that is FINISH again with its
 * outcome unchanged could not be undone (its worker no longer knew it): noted, as the log says.
 */
function stageOf(row: NodeRow, task: NodeTask | undefined): Stage {
  // Only a row whose task ran this time has anything to undo (a kept task of a node decided
  // otherwise since, skipped or not run, does not).
  if (!task || (row.state !== 'task' && row.state !== 'rerun')) return 'none';
  const asked = row.result?.rollback;
  if (task.outcome === TaskStatus.ROLLBACK) return 'done';
  if (typeof asked === 'string' && asked !== 'requested') return 'noted';
  if (task.status !== TaskStatus.FINISH || task.pendingAction === 'rollback') return 'in-flight';
  if (task.outcome !== TaskStatus.SUCCESS) return 'none';
  return asked === 'requested' ? 'noted' : 'awaiting';
}

/**
 * The next step of a failed run's rollback: the succeeded node tasks whose every later node
 * (downstream) is undone or has nothing to undo, in reverse topological order; `done` once
 * nothing is awaiting or under way. A sub-topology node that succeeded is rolled back as one node
 * at its place: its child run undoes its own nodes the same way, then ends ROLLBACK.
 */
export function sagaStep(
  nodes: readonly NodeDef[],
  rows: readonly NodeRow[],
  tasks: ReadonlyMap<string, NodeTask>,
): {
  now: { row: NodeRow; taskId: string }[];
  done: boolean;
  rolledBack: number;
  notes: string[];
} {
  const byKey = new Map(nodes.map((n) => [n.key, n]));
  const ancestors = ancestorSets(nodes, byKey);
  const stages = rows
    .filter((r) => {
      const kind = r.taskId !== null ? kindOfKey(byKey, r.key) : undefined;
      return kind === 'task' || kind === 'topology';
    })
    .map((r) => ({ row: r, task: tasks.get(r.taskId as string) }))
    .map((x) => ({ ...x, stage: stageOf(x.row, x.task) }));
  /** Nodes with a task still to undo or being undone. */
  const open = new Set(
    stages.filter((x) => x.stage === 'awaiting' || x.stage === 'in-flight').map((x) => x.row.key),
  );
  const now = stages
    .filter((x) => x.stage === 'awaiting')
    .filter(
      (x) =>
        ![...open].some((other) => other !== x.row.key && ancestors.get(other)?.has(x.row.key)),
    )
    .map((x) => ({ row: x.row, taskId: x.row.taskId as string }));
  return {
    now,
    done: open.size === 0,
    rolledBack: stages.filter((x) => x.stage === 'done').length,
    notes: stages
      .filter((x) => x.stage === 'noted')
      .map(
        (x) =>
          `${x.row.key}${x.row.item > 0 ? `[${x.row.item}]` : ''} (${String(x.row.result?.rollback === 'requested' ? 'its worker could not' : x.row.result?.rollback)})`,
      ),
  };
}

/** The kind of the node of `key`, if there is one. */
function kindOfKey(byKey: ReadonlyMap<string, NodeDef>, key: string) {
  const n = byKey.get(key);
  return n ? kindOf(n) : undefined;
}
