import { TaskStatus } from '@baton/task-contract';
import { DataSource } from 'typeorm';
import { HOLDING_STATUSES, MID_ATTEMPT } from './task-change';
import { TaskModel } from './task.model';

/**
 * Whether the task holds its lock keys by its state: the rule of `lockKeyHolder` below, for one
 * task in hand. An attempt under way (or paused in the middle) and an outcome not yet cleaned up
 * hold them; INIT, POSTPONE, a retry that waits, FINISH and a PAUSE before any attempt do not.
 * (A given-up attempt still owed a drop by a live worker holds them too, in the rows' rule: that
 * is read from its attempt rows, not the task's. The Checker, which asks this, may let a lease go
 * meanwhile; a start takes a key only after the rows' rule said no task holds it.)
 */
export function holdsLockKeys(t: Pick<TaskModel, 'status' | 'pausedFrom' | 'outcome'>): boolean {
  if (t.status === TaskStatus.PAUSE) return t.pausedFrom === null || MID_ATTEMPT.has(t.pausedFrom);
  if (t.status === TaskStatus.FAIL) return t.outcome !== null;
  return HOLDING_STATUSES.has(t.status);
}

/**
 * Another task that holds one of `keys` by its state: an attempt under way or an outcome not
 * yet cleaned up (the lock lease of a scheduler that died may have run out, the state has not).
 * A task that has not started an attempt holds nothing: INIT, POSTPONE, a retry that waits, and
 * a PAUSE that was not paused in the middle of an attempt (created paused, or paused while it
 * waited).
 *
 * With `liveSince`, also a task whatever its state whose given-up attempt is still owed a drop
 * by a worker that was heard from since then (a heartbeat at or after `liveSince`): that worker
 * may still be running the attempt, which a drive that lost its claim sent it, until it is told.
 * A worker not heard from for that long holds nothing (its runs are taken to have died with it).
 */
export async function lockKeyHolder(
  db: DataSource,
  keys: readonly string[],
  exceptTaskId: string,
  liveSince?: number,
): Promise<string | undefined> {
  if (keys.length === 0) return undefined;
  const marks = (n: number): string => Array.from({ length: n }, () => '?').join(', ');
  const holding = [...HOLDING_STATUSES].filter((x) => x !== TaskStatus.PAUSE);
  const midAttempt = [...MID_ATTEMPT];
  // Keys are stored as a JSON array of strings with no quotes or backslashes in them, so a key
  // is its quoted text in the array. INSTR, not LIKE: SQLite's LIKE ignores case (`DB` would
  // hold `db`), and no character is a wildcard.
  const match = keys.map(() => 'INSTR(t.lock_keys, ?) > 0').join(' OR ');
  const quoted = keys.map((k) => `"${k}"`);
  const byState =
    'SELECT t.task_id AS task_id FROM baton_task t WHERE t.task_id <> ?' +
    ` AND (t.status IN (${marks(holding.length)})` +
    ` OR (t.status = ? AND (t.paused_from IS NULL OR t.paused_from IN (${marks(midAttempt.length)})))` +
    ' OR (t.status = ? AND t.outcome IS NOT NULL))' +
    ` AND (${match})`;
  const stateArgs = [
    exceptTaskId,
    ...holding,
    TaskStatus.PAUSE,
    ...midAttempt,
    TaskStatus.FAIL,
    ...quoted,
  ];
  // The owed drops from the attempts' side, in the same round trip: few owe one, and an index
  // serves each half (`>= 0` rather than IS NOT NULL: SQLite's planner, with no ANALYZE, then
  // uses the drop index too).
  const byDrop =
    'SELECT a.task_id AS task_id FROM baton_task_attempt a' +
    ' JOIN baton_worker w ON w.worker_id = a.worker_id' +
    ' JOIN baton_task t ON t.task_id = a.task_id' +
    ' WHERE a.drop_due_at >= 0 AND w.last_heartbeat_at >= ? AND a.task_id <> ?' +
    ` AND (${match})`;
  const rows = (await (liveSince === undefined
    ? db.query(`${byState} LIMIT 1`, stateArgs)
    : db.query(`${byState} UNION ALL ${byDrop} LIMIT 1`, [
        ...stateArgs,
        liveSince,
        exceptTaskId,
        ...quoted,
      ]))) as { task_id: string }[];
  return rows[0]?.task_id;
}
