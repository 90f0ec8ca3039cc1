import { TaskStatus } from '@baton/task-contract';
import { Brackets, DataSource } from 'typeorm';
import { HOLDING_STATUSES, MID_ATTEMPT } from './task-change';
import { TaskEntity } from './task.entity';
import { TaskModel } from './task.model';

/**
 * Whether the task holds its lock keys by its state: the rule of `lockKeyHolder` below, for one
 * task in hand. An attempt under way (or paused in the middle) and an outcome not yet cleaned up
 * hold them; INIT, POSTPONE, a retry that waits, FINISH and a PAUSE before any attempt do not.
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
 */
export async function lockKeyHolder(
  db: DataSource,
  keys: readonly string[],
  exceptTaskId: string,
): Promise<string | undefined> {
  if (keys.length === 0) return undefined;
  // Keys are stored as a JSON array of strings with no quotes or backslashes in them.
  const like = keys.map(() => "t.lock_keys LIKE :k ESCAPE '!'");
  const row = await db.manager
    .createQueryBuilder(TaskEntity, 't')
    .select('t.task_id', 'task_id')
    .where('t.task_id <> :except', { except: exceptTaskId })
    .andWhere(
      new Brackets((b) =>
        b
          .where('t.status IN (:...holding)', {
            holding: [...HOLDING_STATUSES].filter((x) => x !== TaskStatus.PAUSE),
          })
          .orWhere(
            '(t.status = :pause AND (t.paused_from IS NULL OR t.paused_from IN (:...midAttempt)))',
            { pause: TaskStatus.PAUSE, midAttempt: [...MID_ATTEMPT] },
          )
          .orWhere('(t.status = :fail AND t.outcome IS NOT NULL)', { fail: TaskStatus.FAIL }),
      ),
    )
    .andWhere(
      new Brackets((b) => {
        keys.forEach((k, i) => {
          const pattern = `%"${k.replace(/[!%_]/g, (c) => `!${c}`)}"%`;
          const clause = like[i].replace(':k', `:k${i}`);
          if (i === 0) b.where(clause, { [`k${i}`]: pattern });
          else b.orWhere(clause, { [`k${i}`]: pattern });
        });
      }),
    )
    .limit(1)
    .getRawOne<{ task_id: string }>();
  return row?.task_id;
}
