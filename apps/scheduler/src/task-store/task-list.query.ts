import { DataSource, SelectQueryBuilder } from 'typeorm';
import { booleanModeQuery, fts5Query } from './task-search';
import { TaskEntity } from './task.entity';
import { TaskFilter, TaskOrder, TaskSeek, TaskSort } from './task.model';

/** The column each sort reads; `created` is the id itself (ids are made in time order). */
const SORT_COLUMN = {
  created: null,
  updated: 't.updated_at',
  priority: 't.priority',
} as const satisfies Record<TaskSort, string | null>;

/** Newest first: the list's order when nobody asks for another. */
export const NEWEST_FIRST: TaskOrder = { sort: 'created', dir: 'desc' };

/**
 * The SELECT behind `GET /v1/tasks`: filters, then the order's column and the id (the id breaks
 * ties, so a page boundary between tasks of one key is still exact), seeking past `after`. Every
 * filter has an index of its own (migration TaskListIndexes); EXPLAINs of each shape on a million
 * tasks: `npm run explain:tasks`.
 */
export function taskListQuery(
  db: DataSource,
  filter: TaskFilter,
  after: TaskSeek | undefined,
  limit: number,
  order: TaskOrder = NEWEST_FIRST,
): SelectQueryBuilder<TaskEntity> {
  const q = db.manager.createQueryBuilder(TaskEntity, 't');
  if (filter.taskId) q.andWhere('t.task_id = :id', { id: filter.taskId });
  if (filter.taskType) q.andWhere('t.task_type = :type', { type: filter.taskType });
  if (filter.taskName) q.andWhere('t.task_name = :name', { name: filter.taskName });
  if (filter.namePrefix) {
    // A range, not LIKE: names compare by code point on both databases (binary collation on
    // MariaDB, BINARY on SQLite), where the range walks the name index and needs no escaping.
    q.andWhere('t.task_name >= :np AND t.task_name < :npEnd', {
      np: filter.namePrefix,
      npEnd: `${filter.namePrefix}\u{10FFFF}`,
    });
  }
  if (filter.nameWords?.length) {
    if (db.options.type === 'mysql') {
      q.andWhere('MATCH (t.name_words) AGAINST (:words IN BOOLEAN MODE)', {
        words: booleanModeQuery(filter.nameWords),
      });
    } else {
      q.andWhere(
        't.rowid IN (SELECT rowid FROM baton_task_name_fts WHERE baton_task_name_fts MATCH :words)',
        { words: fts5Query(filter.nameWords) },
      );
    }
  }
  if (filter.status?.length) q.andWhere('t.status IN (:...status)', { status: filter.status });
  if (filter.outcome?.length) q.andWhere('t.outcome IN (:...outcome)', { outcome: filter.outcome });
  if (filter.tenant) q.andWhere('t.tenant = :tenant', { tenant: filter.tenant });
  if (filter.parentTaskId)
    q.andWhere('t.parent_task_id = :parent', { parent: filter.parentTaskId });
  if (filter.controlTaskId)
    q.andWhere('t.control_task_id = :control', { control: filter.controlTaskId });
  if (filter.workerId) q.andWhere('t.worker_id = :worker', { worker: filter.workerId });
  if (filter.attemptsMin !== undefined)
    q.andWhere('t.attempt >= :attempts', { attempts: filter.attemptsMin });
  if (filter.createdFrom !== undefined)
    q.andWhere('t.created_at >= :from', { from: filter.createdFrom });
  if (filter.createdTo !== undefined) q.andWhere('t.created_at < :to', { to: filter.createdTo });
  if (filter.label) {
    q.andWhere(
      'EXISTS (SELECT 1 FROM baton_task_label l WHERE l.task_id = t.task_id AND l.label_key = :lk AND l.label_value = :lv)',
      { lk: filter.label.key, lv: filter.label.value },
    );
  }
  const dir = order.dir === 'asc' ? 'ASC' : 'DESC';
  const past = order.dir === 'asc' ? '>' : '<';
  const column = SORT_COLUMN[order.sort];
  if (column === null) {
    if (after) q.andWhere(`t.task_id ${past} :afterId`, { afterId: after.taskId });
    return q.orderBy('t.task_id', dir).limit(limit);
  }
  if (after) {
    // Spelled out rather than as a row comparison: both optimizers turn it into a range.
    q.andWhere(
      `(${column} ${past} :afterKey OR (${column} = :afterKey AND t.task_id ${past} :afterId))`,
      { afterKey: after.key, afterId: after.taskId },
    );
  }
  return q.orderBy(column, dir).addOrderBy('t.task_id', dir).limit(limit);
}
