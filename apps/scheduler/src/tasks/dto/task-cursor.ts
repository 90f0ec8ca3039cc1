import { ContractErrorCode, ContractException, TASK_ID_PATTERN } from '@baton/task-contract';
import { TASK_SORTS, TaskModel, TaskOrder, TaskSeek, TaskSort } from '../../task-store';

/**
 * A task-list cursor: newest first, the last task's id as it always was (cursors given out before
 * the list had other orders stay good); any other order, base64url of JSON that names the order,
 * the last task's key in it and its id.
 */
export const TASK_CURSOR_PATTERN = /^(?:[0-9A-Z]{26}|[A-Za-z0-9_-]{16,400})$/;

interface CursorBody {
  s: TaskSort;
  o: 'asc' | 'desc';
  k?: number;
  i: string;
}

const isNewestFirst = (o: TaskOrder): boolean => o.sort === 'created' && o.dir === 'desc';
const describe = (o: TaskOrder): string => `sort=${o.sort}&order=${o.dir}`;

function keyOf(sort: TaskSort, t: TaskModel): number | undefined {
  if (sort === 'updated') return t.updatedAt;
  if (sort === 'priority') return t.priority;
  return undefined;
}

/** The cursor that continues after `last` in `order`. */
export function encodeTaskCursor(order: TaskOrder, last: TaskModel): string {
  if (isNewestFirst(order)) return last.taskId;
  const body: CursorBody = {
    s: order.sort,
    o: order.dir,
    k: keyOf(order.sort, last),
    i: last.taskId,
  };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

const notOurs = (): ContractException =>
  new ContractException(ContractErrorCode.VALIDATION_FAILED, 'cursor is not one this API gave out');

/**
 * Where the page after `cursor` starts. Refuses (40000) a cursor this API did not give out, and
 * one given out for another order: it would start the page at a place of another list.
 */
export function decodeTaskCursor(cursor: string, order: TaskOrder): TaskSeek {
  let from: TaskOrder;
  let seek: TaskSeek;
  if (/^[0-9A-Z]{26}$/.test(cursor)) {
    from = { sort: 'created', dir: 'desc' };
    seek = { taskId: cursor };
  } else {
    let body: Partial<CursorBody>;
    try {
      body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<CursorBody>;
    } catch {
      throw notOurs();
    }
    if (typeof body !== 'object' || body === null) throw notOurs();
    const keyed = body.s !== 'created';
    if (
      !TASK_SORTS.includes(body.s as TaskSort) ||
      (body.o !== 'asc' && body.o !== 'desc') ||
      typeof body.i !== 'string' ||
      !TASK_ID_PATTERN.test(body.i) ||
      (keyed ? !Number.isSafeInteger(body.k) : body.k !== undefined)
    )
      throw notOurs();
    from = { sort: body.s as TaskSort, dir: body.o };
    seek = keyed ? { key: body.k, taskId: body.i } : { taskId: body.i };
  }
  if (from.sort !== order.sort || from.dir !== order.dir)
    throw new ContractException(
      ContractErrorCode.VALIDATION_FAILED,
      `cursor belongs to ${describe(from)}, not ${describe(order)}: ask for the first page of this order again`,
      { cursor_order: describe(from), order: describe(order) },
    );
  return seek;
}
