import { ContractErrorCode, ContractException } from '../errors/contract.exception';
import { TASK_STATUSES, TaskStatus, parseTaskStatus } from '../enums/task-status.enum';
import { TRANSITIONS, assertTransition, canTransition, nextStatuses } from './transition-table';

/**
 * The table written out again by hand, as a reader of docs/architecture.md would expect it. Any
 * edit of TRANSITIONS that is not mirrored here fails a test: the table is the contract.
 */
const EXPECTED: Record<TaskStatus, TaskStatus[]> = {
  INIT: [TaskStatus.CREATE, TaskStatus.POSTPONE, TaskStatus.PAUSE, TaskStatus.FAIL],
  CREATE: [
    TaskStatus.PREPARE,
    TaskStatus.RUNNING,
    TaskStatus.POSTPONE,
    TaskStatus.PAUSE,
    TaskStatus.FAIL,
    TaskStatus.NONE,
  ],
  PREPARE: [
    TaskStatus.RUNNING,
    TaskStatus.POSTPONE,
    TaskStatus.PAUSE,
    TaskStatus.FAIL,
    TaskStatus.NONE,
  ],
  POSTPONE: [
    TaskStatus.CREATE,
    TaskStatus.PREPARE,
    TaskStatus.PAUSE,
    TaskStatus.FAIL,
    TaskStatus.NONE,
  ],
  RUNNING: [
    TaskStatus.SUCCESS,
    TaskStatus.FAIL,
    TaskStatus.PAUSE,
    TaskStatus.CREATE,
    TaskStatus.NONE,
  ],
  PAUSE: [
    TaskStatus.INIT,
    TaskStatus.CREATE,
    TaskStatus.PREPARE,
    TaskStatus.POSTPONE,
    TaskStatus.RUNNING,
    TaskStatus.FAIL,
    TaskStatus.NONE,
  ],
  SUCCESS: [TaskStatus.FINISH, TaskStatus.ROLLBACK, TaskStatus.CREATE],
  FAIL: [TaskStatus.CREATE, TaskStatus.ROLLBACK, TaskStatus.FINISH],
  ROLLBACK: [TaskStatus.FINISH],
  FINISH: [TaskStatus.CREATE, TaskStatus.ROLLBACK],
  NONE: [TaskStatus.CREATE, TaskStatus.FAIL, TaskStatus.FINISH],
};

const pairs = TASK_STATUSES.flatMap((from) => TASK_STATUSES.map((to) => [from, to] as const));
const allowed = pairs.filter(([from, to]) => EXPECTED[from].includes(to));
const forbidden = pairs.filter(([from, to]) => !EXPECTED[from].includes(to));

describe('transition table', () => {
  it('has a row for each of the eleven statuses and nothing else', () => {
    expect(Object.keys(TRANSITIONS).sort()).toEqual([...TASK_STATUSES].sort());
    expect(TASK_STATUSES).toHaveLength(11);
  });

  it('covers all 121 ordered pairs between the two lists', () => {
    expect(allowed.length + forbidden.length).toBe(121);
    expect(allowed.length).toBe(Object.values(EXPECTED).reduce((n, list) => n + list.length, 0));
  });

  it.each(allowed)('allows %s -> %s', (from, to) => {
    expect(canTransition(from, to)).toBe(true);
    expect(() => assertTransition(from, to)).not.toThrow();
  });

  it.each(forbidden)('forbids %s -> %s with ILLEGAL_TRANSITION', (from, to) => {
    expect(canTransition(from, to)).toBe(false);
    let thrown: unknown;
    try {
      assertTransition(from, to);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ContractException);
    expect((thrown as ContractException).code).toBe(ContractErrorCode.ILLEGAL_TRANSITION);
    expect((thrown as ContractException).httpStatus).toBe(409);
    expect((thrown as ContractException).data).toEqual({ from, to, allowed: EXPECTED[from] });
  });

  it('leaves no status without a way out: FINISH moves on by a re-run or a late rollback', () => {
    const dead = TASK_STATUSES.filter((s) => nextStatuses(s).length === 0);
    expect(dead).toEqual([]);
    expect(nextStatuses(TaskStatus.FINISH)).toEqual([TaskStatus.CREATE, TaskStatus.ROLLBACK]);
  });

  it('lets every status reach FINISH', () => {
    for (const start of TASK_STATUSES) {
      const seen = new Set<TaskStatus>([start]);
      const queue = [start];
      while (queue.length) {
        for (const next of nextStatuses(queue.shift() as TaskStatus)) {
          if (!seen.has(next)) {
            seen.add(next);
            queue.push(next);
          }
        }
      }
      expect(seen.has(TaskStatus.FINISH)).toBe(true);
    }
  });
});

describe('parseTaskStatus', () => {
  it.each([
    ['POSTPONE', TaskStatus.POSTPONE],
    ['Postpose', TaskStatus.POSTPONE],
    ['postpose', TaskStatus.POSTPONE],
    ['running', TaskStatus.RUNNING],
    [' FINISH ', TaskStatus.FINISH],
  ])('reads %j as %s', (input, expected) => {
    expect(parseTaskStatus(input)).toBe(expected);
  });

  it.each(['POSTPOSED', '', 'DONE', 42, null, undefined])('refuses %j', (input) => {
    expect(parseTaskStatus(input)).toBeUndefined();
  });
});
