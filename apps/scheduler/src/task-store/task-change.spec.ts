import { TaskStatus } from '@baton/task-contract';
import { casRow } from './task-change';
import { newTask } from './testing/new-task';
import { TaskWait } from './task.model';

const wait: TaskWait = { code: 'lock_key', why: 'lock key held: k', since: 1, last: 2, checks: 2 };

describe('casRow: what a change writes', () => {
  it('ends a wait with any move that is not one, and keeps it through a note', () => {
    const waiting = newTask({ status: TaskStatus.POSTPONE, waiting: wait });
    const started = casRow(waiting, { to: TaskStatus.CREATE, reason: 'go', actor: 't' }, 10);
    expect(started.next.waiting).toBeNull();
    expect(started.set).toContainEqual(['waiting', null]);

    const noted = casRow(waiting, { reason: 'cancel asked', note: true, actor: 't' }, 10);
    expect(noted.next.waiting).toEqual(wait);
    expect(noted.set.map(([c]) => c)).not.toContain('waiting');

    // A wait told as a move sets its own.
    const again = { ...wait, checks: 1, since: 10, last: 10 };
    const moved = casRow(
      newTask({ status: TaskStatus.INIT, waiting: null }),
      { to: TaskStatus.POSTPONE, patch: { waiting: again }, reason: 'w', actor: 't' },
      10,
    );
    expect(moved.next.waiting).toEqual(again);
    expect(moved.set).toContainEqual(['waiting', JSON.stringify(again)]);
  });
});
