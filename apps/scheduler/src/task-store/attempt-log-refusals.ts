import { EntityManager } from 'typeorm';
import { SqlRunner } from './sql-runner';

/** Why a worker's lines were refused: no such task, or not an attempt and fence it was given. */
export type AppendRefusal = 'unknown' | 'stale';

/** What the check needs of a worker's batch of lines (no fence: not a worker's, not checked). */
export interface CheckedAppend {
  taskId: string;
  attempt: number;
  fence?: number;
}

/**
 * The batches of a group whose task, attempt or fence does not hold, and why: two statements for
 * the whole group (the tasks, then the attempts' first fences), in the group's transaction. A
 * batch is `unknown` without its task; `stale` for an attempt or fence past the task's, or a
 * fence older than the one its attempt began with.
 */
export async function logRefusals<A extends CheckedAppend>(
  sql: SqlRunner,
  m: EntityManager,
  group: readonly A[],
): Promise<Map<A, AppendRefusal>> {
  const out = new Map<A, AppendRefusal>();
  const checked = group.filter((a) => a.fence !== undefined);
  if (checked.length === 0) return out;
  const ids = [...new Set(checked.map((a) => a.taskId))];
  const tasks = await sql.selectIn(m, 'baton_task', 'task_id, attempt, fence', 'task_id', ids);
  const { records: attempts } = await sql.exec(
    m,
    `SELECT task_id, attempt, fence FROM baton_task_attempt WHERE ${checked.map(() => '(task_id = ? AND attempt = ?)').join(' OR ')}`,
    checked.flatMap((a) => [a.taskId, a.attempt]),
  );
  type Row = { task_id: string; attempt: unknown; fence: unknown };
  const task = new Map((tasks as Row[]).map((r) => [r.task_id, r]));
  const since = new Map(
    (attempts as Row[]).map((r) => [`${r.task_id}/${Number(r.attempt)}`, Number(r.fence)]),
  );
  for (const a of checked) {
    const t = task.get(a.taskId);
    const fence = a.fence as number;
    const first = since.get(`${a.taskId}/${a.attempt}`);
    if (!t) out.set(a, 'unknown');
    else if (a.attempt > Number(t.attempt) || fence > Number(t.fence)) out.set(a, 'stale');
    else if (first === undefined || fence < first) out.set(a, 'stale');
  }
  return out;
}
