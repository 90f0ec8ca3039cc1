import { ContractErrorCode } from '@baton/task-contract';
import { newTask } from '../../task-store/testing/new-task';
import { TaskOrder } from '../../task-store';
import { TASK_CURSOR_PATTERN, decodeTaskCursor, encodeTaskCursor } from './task-cursor';
import { searchFilterOf } from './list-tasks.query';

const ID = '01JD2Z6W8ZK3Y4N5P6Q7R8S9T0';

describe('task list cursors', () => {
  it('gives the bare id newest first, as cursors always were, and reads it back', () => {
    const order: TaskOrder = { sort: 'created', dir: 'desc' };
    const cursor = encodeTaskCursor(order, newTask({ taskId: ID }));
    expect(cursor).toBe(ID);
    expect(decodeTaskCursor(cursor, order)).toEqual({ taskId: ID });
  });

  it.each([
    [{ sort: 'updated', dir: 'desc' }, 1_765_000_000_123],
    [{ sort: 'priority', dir: 'asc' }, 7],
    [{ sort: 'created', dir: 'asc' }, undefined],
  ] as [TaskOrder, number | undefined][])(
    'carries the key and the id in %j, and refuses it in any other order',
    (order, key) => {
      const task = newTask({ taskId: ID, updatedAt: 1_765_000_000_123, priority: 7 });
      const cursor = encodeTaskCursor(order, task);
      expect(cursor).toMatch(TASK_CURSOR_PATTERN);
      expect(decodeTaskCursor(cursor, order)).toEqual(
        key === undefined ? { taskId: ID } : { key, taskId: ID },
      );
      for (const other of [
        { sort: 'created', dir: 'desc' },
        { sort: order.sort, dir: order.dir === 'asc' ? 'desc' : 'asc' },
      ] as TaskOrder[])
        expect(() => decodeTaskCursor(cursor, other)).toThrow(
          expect.objectContaining({ code: ContractErrorCode.VALIDATION_FAILED }),
        );
    },
  );

  it('refuses a cursor it did not give out', () => {
    const order: TaskOrder = { sort: 'updated', dir: 'desc' };
    const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
    for (const bad of [
      'not-base64-json-at-all',
      b64({ s: 'updated', o: 'desc', i: ID }),
      b64({ s: 'updated', o: 'desc', k: 1.5, i: ID }),
      b64({ s: 'updated', o: 'sideways', k: 1, i: ID }),
      b64({ s: 'name', o: 'desc', k: 1, i: ID }),
      b64({ s: 'updated', o: 'desc', k: 1, i: 'a b' }),
      b64(null),
    ])
      expect(() => decodeTaskCursor(bad, order)).toThrow(/not one this API gave out/);
  });
});

describe('the search box', () => {
  it('finds a task by its id in either case, and names by their indexed words', () => {
    expect(searchFilterOf(ID.toLowerCase())).toEqual({ taskId: ID });
    expect(searchFilterOf(' Nightly BACKUP of db-7 orders_db ')).toEqual({
      nameWords: ['nightly', 'backup', 'orders_db'],
    });
    expect(searchFilterOf(undefined)).toEqual({});
  });

  it('refuses text with no word the index holds', () => {
    for (const text of ['ab', 'the of', '!!', 'a-b c'])
      expect(() => searchFilterOf(text)).toThrow(/no word to look for/);
  });
});
