import {
  BlockingKind,
  CANCELLED_OUTCOME,
  ContractErrorCode,
  IllegalTransitionError,
  RepetitionKind,
  StaleFenceError,
  TRANSITIONS,
  TaskStatus,
  WorkerRateLimitedError,
  WorkerTimeoutError,
  WorkerUnavailableError,
  WorkerValidationError,
  canTransition,
} from '@baton/task-contract';
import { TaskModel } from '../../task-store';
import { newTask } from '../../task-store/testing/new-task';
import { TASK_TYPE_DEFAULTS, TaskTypeModel } from '../../task-types';
import {
  Change,
  Failure,
  Route,
  decideCallFailure,
  decideFailure,
  decidePoll,
  decideRecovery,
  decideTimeout,
  decideUnstartable,
  finishChange,
  moveChange,
  postponeChange,
  queueTimeout,
  route,
  startTimeWait,
  wantsRollback,
} from '.';

/*
 * The engine's rules, one table per decision: each row is a task (and what happened), and the
 * steps expected, written out. Jitter is fixed (random = 0.5: a backoff is 3/4 of its exponent).
 */

const NOW = Date.UTC(2026, 0, 1, 12);
const HALF = (): number => 0.5;

const task = (over: Partial<TaskModel> = {}): TaskModel =>
  newTask({ taskId: 'T1', lockKeys: [], createdAt: NOW - 1000, dueAt: NOW, ...over });
const type = (over: Partial<TaskTypeModel> = {}): TaskTypeModel => ({
  ...TASK_TYPE_DEFAULTS,
  timeoutPolicy: { ...TASK_TYPE_DEFAULTS.timeoutPolicy },
  taskType: 'demo.echo',
  blocking: BlockingKind.ASYNC,
  implements: [],
  createdAt: 0,
  updatedAt: 0,
  ...over,
});
const permanent = { repetition: RepetitionKind.PERMANENT };

/** A change the engine writes must be a move the state table allows. */
function expectAllowed(from: TaskStatus, change: Change): void {
  if (change.to !== undefined && change.to !== from)
    expect({ from, to: change.to, allowed: canTransition(from, change.to) }).toEqual({
      from,
      to: change.to,
      allowed: true,
    });
}

describe('route: which part acts on a claimed task, per row of the state table', () => {
  const rows: [string, Partial<TaskModel>, Route][] = [
    ['INIT starts', { status: TaskStatus.INIT }, 'start'],
    ['CREATE (a re-drive) starts again', { status: TaskStatus.CREATE }, 'start'],
    ['PREPARE (a re-drive) starts again', { status: TaskStatus.PREPARE }, 'start'],
    ['POSTPONE starts when due', { status: TaskStatus.POSTPONE }, 'start'],
    ['RUNNING is polled', { status: TaskStatus.RUNNING }, 'poll'],
    ['PAUSE waits for a person', { status: TaskStatus.PAUSE }, 'release'],
    ['SUCCESS is cleaned', { status: TaskStatus.SUCCESS }, 'clean-success'],
    [
      'SUCCESS of a permanent task starts its next life',
      { status: TaskStatus.SUCCESS, pendingAction: 'restart' },
      'start',
    ],
    [
      'SUCCESS of a cancelled permanent task is cleaned',
      { status: TaskStatus.SUCCESS, pendingAction: 'restart', cancelRequested: true },
      'clean-success',
    ],
    [
      'FAIL of a run is decided',
      { status: TaskStatus.FAIL, pendingAction: 'decide' },
      'decide-failure',
    ],
    ['FAIL without outcome is a retry', { status: TaskStatus.FAIL, outcome: null }, 'start'],
    [
      'FAIL for good is rolled back or cleaned',
      { status: TaskStatus.FAIL, outcome: TaskStatus.FAIL },
      'rollback-or-clean',
    ],
    [
      'FAIL without outcome but cancelled ends',
      { status: TaskStatus.FAIL, outcome: null, cancelRequested: true },
      'rollback-or-clean',
    ],
    [
      'FAIL with a rollback asked for ends',
      { status: TaskStatus.FAIL, outcome: null, pendingAction: 'rollback' },
      'rollback-or-clean',
    ],
    ['ROLLBACK is cleaned', { status: TaskStatus.ROLLBACK }, 'clean-rollback'],
    ['FINISH rests', { status: TaskStatus.FINISH }, 'release'],
    ['FINISH with a re-run starts', { status: TaskStatus.FINISH, pendingAction: 'rerun' }, 'start'],
    [
      'FINISH with a late rollback undoes',
      { status: TaskStatus.FINISH, pendingAction: 'rollback' },
      'late-rollback',
    ],
    ['NONE (the worker forgot it) starts again', { status: TaskStatus.NONE }, 'start'],
  ];

  it.each(rows)('%s', (_name, over, expected) => {
    expect(route(task(over))).toBe(expected);
  });

  it('has a row for every status of the state table', () => {
    const covered = new Set(rows.map(([, over]) => over.status));
    expect([...covered].sort()).toEqual(Object.keys(TRANSITIONS).sort());
  });
});

describe('before a start', () => {
  it.each([
    ['no start time', null, undefined],
    ['start time within the early claim', NOW + 5, undefined],
    ['start time ahead', NOW + 60_000, NOW + 60_000],
  ])('%s', (_name, startTime, until) => {
    expect(startTimeWait(task({ startTime }), NOW)?.until).toBe(until);
  });

  it.each([
    ['no queue timeout', {}, {}, undefined],
    ['within the queue timeout', { queueTimeoutMs: 5000 }, {}, undefined],
    ['past it, policy fail', { queueTimeoutMs: 500 }, {}, 'fail'],
    [
      'past it, policy alert',
      {
        queueTimeoutMs: 500,
        timeoutPolicy: { queue: 'alert', heartbeat: 'retry', deadline: 'fail' },
      },
      {},
      'alert',
    ],
    [
      'past it, policy retry (keep waiting)',
      {
        queueTimeoutMs: 500,
        timeoutPolicy: { queue: 'retry', heartbeat: 'retry', deadline: 'fail' },
      },
      {},
      'alert',
    ],
    ['a later attempt is not timed', { queueTimeoutMs: 500 }, { attempt: 1 }, undefined],
  ] as [string, Partial<TaskTypeModel>, Partial<TaskModel>, string | undefined][])(
    'queue timeout: %s',
    (_name, typeOver, taskOver, expected) => {
      expect(queueTimeout(task(taskOver), type(typeOver), NOW)?.policy).toBe(expected);
    },
  );

  it('counts the queue wait from the start time when there is one', () => {
    const t = task({ startTime: NOW - 100, createdAt: NOW - 10_000 });
    expect(queueTimeout(t, type({ queueTimeoutMs: 500 }), NOW)).toBeUndefined();
  });

  it.each([
    [TaskStatus.INIT, { to: TaskStatus.POSTPONE, patch: { dueAt: NOW + 10 } }],
    // Already waiting: the table has no POSTPONE -> POSTPONE, so a new wait is an event.
    [TaskStatus.POSTPONE, { reason: 'waiting: lock key held', note: true }],
    [
      TaskStatus.CREATE,
      {
        to: TaskStatus.POSTPONE,
        patch: { dueAt: NOW + 10, moves: 1 },
        attemptEnd: { outcome: TaskStatus.POSTPONE, error: 'lock key held', drop: true },
      },
    ],
    [TaskStatus.FAIL, { reason: 'waiting: lock key held', note: true }],
    [TaskStatus.NONE, { reason: 'waiting: lock key held', note: true }],
  ] as [TaskStatus, Partial<Change>][])('a wait from %s', (status, expected) => {
    const change = postponeChange(task({ status }), NOW + 10, 'lock_key', 'lock key held', NOW);
    expect(change).toMatchObject(expected);
    expect(change.patch).toMatchObject({
      owner: null,
      leaseUntil: null,
      waiting: { code: 'lock_key', why: 'lock key held', since: NOW, last: NOW, checks: 1 },
    });
    expect(change.repeatOf).toBeUndefined();
    expectAllowed(status, change);
  });

  const held = (by: string) => `lock key held by task ${by}: db:orders`;
  const waited = (why: string, checks = 3) => ({
    code: 'lock_key',
    why,
    since: NOW - 5000,
    last: NOW - 1000,
    checks,
  });
  it.each([
    [
      'the same wait again counts on its row',
      { status: TaskStatus.POSTPONE, waiting: waited(held('A')) },
      held('A'),
      {
        note: true,
        repeatOf: held('A'),
        reason: `waiting: ${held('A')}`,
        patch: { waiting: { ...waited(held('A')), last: NOW, checks: 4 } },
      },
    ],
    [
      'a retry waiting in FAIL for the same reason too',
      { status: TaskStatus.FAIL, waiting: waited(held('A')) },
      held('A'),
      { note: true, repeatOf: held('A'), patch: { waiting: { checks: 4, since: NOW - 5000 } } },
    ],
    [
      'another holder is a new wait: a row of its own',
      { status: TaskStatus.POSTPONE, waiting: waited(held('A')) },
      held('B'),
      {
        note: true,
        reason: `waiting: ${held('B')}`,
        patch: { waiting: { why: held('B'), since: NOW, checks: 1 } },
      },
    ],
    [
      'a wait after the task waited no more (INIT again): a move',
      { status: TaskStatus.INIT, waiting: null },
      held('A'),
      { to: TaskStatus.POSTPONE, patch: { waiting: { checks: 1 } } },
    ],
    [
      'an attempt bound to its worker is given up, whatever it waited for before',
      { status: TaskStatus.CREATE, waiting: waited(held('A')) },
      held('A'),
      { to: TaskStatus.POSTPONE, patch: { waiting: { checks: 1, since: NOW } } },
    ],
  ] as [string, Partial<TaskModel>, string, object][])('%s', (_name, over, why, expected) => {
    const change = postponeChange(task(over), NOW + 10, 'lock_key', why, NOW);
    expect(change).toMatchObject(expected);
    if (!('repeatOf' in expected)) expect(change.repeatOf).toBeUndefined();
  });
});

describe('decideFailure: retries, restarts and the final failure', () => {
  const boom: Failure = { why: 'boom', retryable: true, drop: false };
  const rows: [string, Partial<TaskModel>, Partial<TaskTypeModel>, typeof boom, object][] = [
    [
      'a retry while attempts remain, after backoff',
      { status: TaskStatus.RUNNING, attempt: 1, maxRetry: 2 },
      {},
      boom,
      {
        kind: 'retry',
        change: {
          to: TaskStatus.FAIL,
          patch: { dueAt: NOW + 750, outcome: null, owner: null },
          reason: 'attempt 1 failed (boom); retry 1 of 2',
        },
      },
    ],
    [
      'the backoff doubles per counted attempt',
      { status: TaskStatus.RUNNING, attempt: 3, maxRetry: 5 },
      {},
      boom,
      { kind: 'retry', change: { patch: { dueAt: NOW + 3000 } } },
    ],
    [
      'the backoff stops at its cap',
      { status: TaskStatus.RUNNING, attempt: 12, maxRetry: 20 },
      { backoffMaxMs: 8000 },
      boom,
      { kind: 'retry', change: { patch: { dueAt: NOW + 6000 } } },
    ],
    [
      'max_retry -1 takes the type',
      { status: TaskStatus.RUNNING, attempt: 2, maxRetry: -1 },
      { maxRetry: 2 },
      boom,
      { kind: 'retry', change: { reason: 'attempt 2 failed (boom); retry 2 of 2' } },
    ],
    [
      'attempts used up: FAIL for good',
      { status: TaskStatus.RUNNING, attempt: 3, maxRetry: 2 },
      {},
      boom,
      {
        kind: 'final',
        change: {
          to: TaskStatus.FAIL,
          patch: { outcome: TaskStatus.FAIL, dueAt: NOW, error: { message: 'boom' } },
          reason: 'failed: boom',
        },
      },
    ],
    [
      'moves are not counted against max_retry',
      { status: TaskStatus.RUNNING, attempt: 3, moves: 1, maxRetry: 2 },
      {},
      boom,
      { kind: 'retry', change: { reason: 'attempt 3 failed (boom); retry 2 of 2' } },
    ],
    [
      'a failure that may not be retried is final',
      { status: TaskStatus.RUNNING, attempt: 1, maxRetry: 5 },
      {},
      { ...boom, retryable: false },
      { kind: 'final', change: { patch: { outcome: TaskStatus.FAIL } } },
    ],
    [
      'a cancel asked for ends as CANCELLED',
      { status: TaskStatus.RUNNING, attempt: 1, maxRetry: 5, cancelRequested: true },
      {},
      boom,
      { kind: 'final', change: { patch: { outcome: CANCELLED_OUTCOME } } },
    ],
    [
      'the code is kept with the error',
      { status: TaskStatus.RUNNING, attempt: 1 },
      {},
      { ...boom, code: 'deadline_timeout' },
      {
        kind: 'final',
        change: { patch: { error: { message: 'boom', code: 'deadline_timeout' } } },
      },
    ],
    [
      'a dropped attempt says so',
      { status: TaskStatus.RUNNING, attempt: 1 },
      {},
      { ...boom, drop: true },
      { kind: 'final', change: { attemptEnd: { outcome: TaskStatus.FAIL, drop: true } } },
    ],
    [
      'a permanent task restarts whatever ended its life',
      { ...permanent, status: TaskStatus.RUNNING, attempt: 4, startedAt: NOW - 10 },
      {},
      { ...boom, retryable: false },
      {
        kind: 'restart',
        change: {
          to: TaskStatus.FAIL,
          patch: { dueAt: NOW + 6000 },
          reason: 'life 4 of a permanent task ended (boom); restart 4 in 6000 ms',
        },
      },
    ],
    [
      'a permanent task that lived long restarts after the base backoff',
      { ...permanent, status: TaskStatus.RUNNING, attempt: 4, startedAt: NOW - 120_000 },
      {},
      boom,
      { kind: 'restart', change: { patch: { dueAt: NOW + 750 } } },
    ],
    [
      'a cancelled permanent task ends',
      { ...permanent, status: TaskStatus.RUNNING, attempt: 4, cancelRequested: true },
      {},
      boom,
      { kind: 'final', change: { patch: { outcome: CANCELLED_OUTCOME } } },
    ],
    [
      'a permanent task whose next life could not start waits in SUCCESS',
      { ...permanent, status: TaskStatus.SUCCESS, attempt: 4 },
      {},
      boom,
      { kind: 'next-life' },
    ],
    [
      'a simple task in SUCCESS ends as a success',
      { status: TaskStatus.SUCCESS, attempt: 1 },
      {},
      boom,
      { kind: 'clean-success' },
    ],
  ];

  it.each(rows)('%s', (_name, over, typeOver, failure, expected) => {
    const t = task(over);
    const plan = decideFailure(t, type(typeOver), failure, NOW, HALF);
    expect(plan).toMatchObject(expected);
    if ('change' in plan) expectAllowed(t.status, plan.change);
  });

  it.each([
    ['FAIL for good', task({ status: TaskStatus.INIT }), 'final'],
    [
      'a permanent task waits for its next life',
      task({ ...permanent, status: TaskStatus.SUCCESS }),
      'next-life',
    ],
    ['a task in SUCCESS ends as one', task({ status: TaskStatus.SUCCESS }), 'clean-success'],
  ])('a failure with no attempt behind it: %s', (_name, t, kind) => {
    const plan = decideUnstartable(t, 'task type x is not registered', 'no_type', NOW);
    expect(plan.kind).toBe(kind);
    if (plan.kind === 'final') {
      expect(plan.change.patch).toEqual({
        error: { message: 'task type x is not registered', code: 'no_type' },
        outcome: TaskStatus.FAIL,
        dueAt: NOW,
      });
      expectAllowed(t.status, plan.change);
    }
  });
});

describe('recoveries and moves: not counted against max_retry', () => {
  it.each([
    ['the first recovery goes at once', 0, NOW],
    ['later ones back off', 2, NOW + 1500],
    ['the backoff of many stops at the cap', 40, NOW + 45_000],
  ])('%s', (_name, moves, dueAt) => {
    const t = task({ status: TaskStatus.RUNNING, attempt: 3, moves });
    const plan = decideRecovery(t, type(), 'execution lost', NOW, HALF);
    expect(plan).toMatchObject({
      kind: 'recover',
      change: {
        to: TaskStatus.FAIL,
        patch: { moves: moves + 1, dueAt, outcome: null, error: { code: 'execution_lost' } },
        attemptEnd: { outcome: TaskStatus.FAIL, drop: true },
        reason:
          'execution lost; recovered by attempt 4 (a recovery, not counted against max_retry)',
      },
    });
    if (plan.kind === 'recover') expectAllowed(t.status, plan.change);
  });

  it('a recovery of a task being cancelled ends it instead', () => {
    const t = task({ status: TaskStatus.RUNNING, cancelRequested: true });
    expect(decideRecovery(t, type(), 'lost', NOW, HALF)).toEqual({
      kind: 'cancelled',
      failure: { why: 'lost', retryable: false, drop: true },
    });
  });

  it.each([
    [TaskStatus.CREATE, TaskStatus.POSTPONE],
    [TaskStatus.PREPARE, TaskStatus.POSTPONE],
    [TaskStatus.RUNNING, TaskStatus.FAIL],
  ])('a move from %s goes through %s', (status, to) => {
    const t = task({ status, attempt: 2, moves: 0 });
    const change = moveChange(t, type(), 'refused', NOW, HALF);
    expect(change).toMatchObject({
      to,
      patch: { moves: 1, dueAt: NOW, pendingAction: null },
      attemptEnd: { outcome: to, drop: true },
      reason: 'refused; attempt 2 moves to another worker (not counted against max_retry)',
    });
    if (to === TaskStatus.FAIL) expect(change.patch).toMatchObject({ outcome: null });
    expectAllowed(status, change);
  });
});

describe('decideCallFailure: what a failed call to a worker leads to', () => {
  const refused = new WorkerUnavailableError(
    'refused',
    ContractErrorCode.WORKER_UNAVAILABLE,
    0,
    null,
    {
      cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    },
  );
  const reset = new WorkerUnavailableError('reset', ContractErrorCode.WORKER_UNAVAILABLE, 0, null, {
    cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
  });
  const timeout = new WorkerTimeoutError('slow', ContractErrorCode.WORKER_TIMEOUT, 0);
  const illegal = new IllegalTransitionError('no', ContractErrorCode.ILLEGAL_TRANSITION, 409);
  const stale = new StaleFenceError('stale', ContractErrorCode.STALE_FENCE, 409);
  const limited = new WorkerRateLimitedError('slow down', ContractErrorCode.RATE_LIMITED, 429);
  const invalid = new WorkerValidationError('bad', ContractErrorCode.VALIDATION_FAILED, 400);
  const rows: [string, unknown, string, Partial<TaskModel>, object][] = [
    ['a stale fence: stand down', stale, 'run', {}, { kind: 'stand-down' }],
    ['a refused connection moves', refused, 'run', {}, { kind: 'move', workerFault: true }],
    ['a rate-limited call moves', limited, 'run', {}, { kind: 'move', workerFault: false }],
    ['a create that timed out moves', timeout, 'create', {}, { kind: 'move', workerFault: true }],
    ['a create refused for its state moves', illegal, 'create', {}, { kind: 'move' }],
    [
      'a run that timed out has an unknown outcome: the worker is asked, nothing is failed',
      timeout,
      'run',
      { status: TaskStatus.RUNNING, heartbeatAt: NOW - 60_000 },
      {
        kind: 'unknown',
        workerFault: true,
        change: {
          note: true,
          reason: 'why; the outcome is unknown: the worker is asked',
          patch: { dueAt: NOW, heartbeatAt: NOW, owner: null },
        },
      },
    ],
    [
      'a create-and-run that timed out too, RUNNING already',
      timeout,
      'create and run',
      { status: TaskStatus.RUNNING },
      { kind: 'unknown', change: { note: true } },
    ],
    [
      'an async run call that timed out from CREATE: RUNNING, for the poll to ask',
      timeout,
      'run',
      { status: TaskStatus.CREATE, startedAt: null },
      {
        kind: 'unknown',
        change: { to: TaskStatus.RUNNING, patch: { startedAt: NOW, dueAt: NOW } },
      },
    ],
    [
      'a reset after sending the run: unknown as well',
      reset,
      'run',
      { status: TaskStatus.RUNNING },
      { kind: 'unknown', workerFault: true },
    ],
    [
      'a prepare that timed out fails, retryable',
      timeout,
      'prepare',
      {},
      { kind: 'fail', workerFault: true, failure: { retryable: true, drop: true } },
    ],
    [
      'a 5xx answer to the run is an answer: fails, retryable',
      new WorkerUnavailableError('down', ContractErrorCode.WORKER_UNAVAILABLE, 503),
      'run',
      {},
      { kind: 'fail', workerFault: true, failure: { retryable: true } },
    ],
    [
      'a run refused for its state fails for good',
      illegal,
      'run',
      {},
      { kind: 'fail', workerFault: false, failure: { retryable: false } },
    ],
    [
      'a refusal of the request fails for good',
      invalid,
      'run',
      {},
      { kind: 'fail', failure: { retryable: false } },
    ],
    [
      'an unknown error fails, retryable',
      new Error('bug'),
      'run',
      {},
      { kind: 'fail', failure: { retryable: true } },
    ],
    [
      'an unsent call of a task being cancelled fails',
      refused,
      'run',
      { cancelRequested: true },
      { kind: 'fail', failure: { retryable: true } },
    ],
  ];
  it.each(rows)('%s', (_name, err, call, over, expected) => {
    expect(decideCallFailure(task(over), err, call, 'why', NOW)).toMatchObject(expected);
  });
});

describe('timeouts under their policy', () => {
  it.each([
    [
      'alert: an event, and a look again after a poll interval',
      'alert',
      {
        kind: 'alert',
        change: { patch: { dueAt: NOW + 1000 }, note: true, reason: 'alert: late' },
      },
    ],
    [
      'retry: a failure under the retry rules',
      'retry',
      { kind: 'fail', failure: { retryable: true, drop: true, code: 'heartbeat_timeout' } },
    ],
    [
      'fail: a final failure',
      'fail',
      { kind: 'fail', failure: { retryable: false, code: 'heartbeat_timeout' } },
    ],
  ] as const)('%s', (_name, policy, expected) => {
    expect(decideTimeout(policy, 'late', 'heartbeat_timeout', NOW, 1000)).toMatchObject(expected);
  });
});

describe('decidePoll: a RUNNING task is due', () => {
  const POLL = 1000;
  const running = (over: Partial<TaskModel> = {}): TaskModel =>
    task({
      status: TaskStatus.RUNNING,
      attempt: 2,
      startedAt: NOW - 5000,
      heartbeatAt: NOW - 5000,
      workerId: 'w1',
      ...over,
    });
  const view = (task_status: TaskStatus, attempt = 2) => ({ attempt, task_status });
  const rows: [
    string,
    Partial<TaskModel>,
    Partial<TaskTypeModel>,
    Parameters<typeof decidePoll>[2],
    boolean,
    object,
  ][] = [
    [
      'first ask the worker',
      {},
      {},
      { kind: 'before-query' },
      false,
      { kind: 'ask', what: 'query' },
    ],
    [
      'past its deadline: still ask the worker first',
      { deadlineSecond: 4 },
      {},
      { kind: 'before-query' },
      false,
      { kind: 'ask', what: 'query' },
    ],
    [
      'past its deadline and still running: tell the worker, then the deadline policy',
      { deadlineSecond: 4 },
      {},
      { kind: 'query', task: view(TaskStatus.RUNNING) },
      false,
      {
        kind: 'deadline',
        timeout: { kind: 'fail', failure: { code: 'deadline_timeout', retryable: false } },
      },
    ],
    [
      'past its deadline with an outcome at the worker: the outcome (the work was done)',
      { deadlineSecond: 4 },
      {},
      { kind: 'query', task: view(TaskStatus.SUCCESS) },
      false,
      { kind: 'outcome', outcome: TaskStatus.SUCCESS },
    ],
    [
      'past its deadline and unreachable: its outcome is unknown, so the heartbeat timeout decides',
      { deadlineSecond: 4 },
      {},
      { kind: 'unreachable', error: 'ECONNREFUSED' },
      false,
      { kind: 'again', change: { reason: 'poll failed' } },
    ],
    [
      'past its deadline, the worker knows no such attempt: the deadline policy',
      { deadlineSecond: 4 },
      {},
      { kind: 'query', task: undefined },
      true,
      { kind: 'deadline' },
    ],
    [
      'a sync run is bounded by 300 s without a deadline',
      { startedAt: NOW - 301_000 },
      { blocking: BlockingKind.SYNC },
      { kind: 'query', task: view(TaskStatus.RUNNING) },
      false,
      { kind: 'deadline' },
    ],
    [
      'an async run without a deadline is not',
      { startedAt: NOW - 301_000 },
      {},
      { kind: 'query', task: view(TaskStatus.RUNNING) },
      false,
      { kind: 'ask', what: 'heartbeat' },
    ],
    [
      'an unknown task created and run in one call is sent again',
      {},
      {},
      { kind: 'query', task: undefined },
      true,
      { kind: 'resume-run', create: true },
    ],
    [
      'an unknown task is lost',
      {},
      {},
      { kind: 'query', task: undefined },
      false,
      { kind: 'worker-lost', why: 'the worker does not know the task' },
    ],
    [
      'another attempt there is lost',
      {},
      {},
      { kind: 'query', task: view(TaskStatus.RUNNING, 1) },
      false,
      { kind: 'worker-lost', why: 'the worker has attempt 1, not 2' },
    ],
    [
      'a run call that never arrived is sent again',
      {},
      {},
      { kind: 'query', task: view(TaskStatus.PREPARE) },
      false,
      { kind: 'resume-run', create: false },
    ],
    [
      'the worker has the outcome',
      {},
      {},
      { kind: 'query', task: view(TaskStatus.SUCCESS) },
      false,
      { kind: 'outcome', outcome: TaskStatus.SUCCESS },
    ],
    [
      'the worker has a failure',
      {},
      {},
      { kind: 'query', task: view(TaskStatus.FAIL) },
      false,
      { kind: 'outcome', outcome: TaskStatus.FAIL },
    ],
    [
      'still running: ask its heartbeat',
      {},
      {},
      { kind: 'query', task: view(TaskStatus.RUNNING) },
      false,
      { kind: 'ask', what: 'heartbeat' },
    ],
    [
      'alive: look again, the beat and the progress written',
      {},
      {},
      {
        kind: 'heartbeat',
        task: { ...view(TaskStatus.RUNNING), progress: { percent: 40, step: 's', message: null } },
        heartbeat: { alive: true },
      },
      false,
      {
        kind: 'again',
        change: {
          reason: 'polled',
          patch: { heartbeatAt: NOW, dueAt: NOW + POLL, owner: null, progress: { percent: 40 } },
        },
      },
    ],
    [
      'its execution was lost with a restart: recover',
      {},
      {},
      {
        kind: 'heartbeat',
        task: view(TaskStatus.RUNNING),
        heartbeat: { alive: false, execution_lost: true, task_status: TaskStatus.RUNNING },
      },
      false,
      { kind: 'recover' },
    ],
    [
      'no beat past the heartbeat timeout: its policy',
      { heartbeatAt: NOW - 31_000 },
      {},
      { kind: 'heartbeat', task: view(TaskStatus.RUNNING), heartbeat: { alive: false } },
      false,
      {
        kind: 'heartbeat-timeout',
        timeout: { kind: 'fail', failure: { retryable: true, why: 'no heartbeat for 31000 ms' } },
      },
    ],
    [
      'late to beat but within the timeout: look again',
      {},
      {},
      { kind: 'heartbeat', task: view(TaskStatus.RUNNING), heartbeat: { alive: false } },
      false,
      { kind: 'again', change: { patch: { dueAt: NOW + POLL } } },
    ],
    [
      'unreachable past the heartbeat timeout: its policy',
      { heartbeatAt: NOW - 40_000 },
      { timeoutPolicy: { queue: 'fail', heartbeat: 'alert', deadline: 'fail' } },
      { kind: 'unreachable', error: 'ECONNREFUSED' },
      false,
      {
        kind: 'heartbeat-timeout',
        timeout: {
          kind: 'alert',
          why: 'worker unreachable and no heartbeat for 40000 ms: ECONNREFUSED',
        },
      },
    ],
    [
      'unreachable past the heartbeat timeout, a type that recovers a lost worker: recover',
      { heartbeatAt: NOW - 40_000 },
      { onWorkerLost: 'recover' },
      { kind: 'unreachable', error: 'ECONNREFUSED' },
      false,
      {
        kind: 'recover',
        why: expect.stringMatching(/unreachable for 40000 ms .*on_worker_lost: recover/),
      },
    ],
    [
      'recover is not for a task with lock keys: its run may still hold them, so its timeout policy',
      { heartbeatAt: NOW - 40_000, lockKeys: ['db:orders'] },
      { onWorkerLost: 'recover' },
      { kind: 'unreachable', error: 'ECONNREFUSED' },
      false,
      { kind: 'heartbeat-timeout' },
    ],
    [
      'a worker that answers but whose run stopped beating is not lost: its timeout policy',
      { heartbeatAt: NOW - 31_000 },
      { onWorkerLost: 'recover' },
      { kind: 'heartbeat', task: view(TaskStatus.RUNNING), heartbeat: { alive: false } },
      false,
      { kind: 'heartbeat-timeout' },
    ],
    [
      'unreachable within it: look again',
      {},
      {},
      { kind: 'unreachable', error: 'x' },
      false,
      { kind: 'again', change: { reason: 'poll failed' } },
    ],
  ];
  it.each(rows)('%s', (_name, over, typeOver, seen, createsAndRuns, expected) => {
    expect(
      decidePoll(running(over), type(typeOver), seen, NOW, POLL, createsAndRuns),
    ).toMatchObject(expected);
  });

  it('an alive beat is not written when the worker missed it', () => {
    const plan = decidePoll(
      running(),
      type(),
      { kind: 'heartbeat', task: view(TaskStatus.RUNNING), heartbeat: { alive: false } },
      NOW,
      POLL,
      false,
    );
    expect(plan.kind === 'again' && plan.change.patch).not.toHaveProperty('heartbeatAt');
  });
});

describe('the end', () => {
  it.each([
    ['SUCCESS cleans to FINISH/SUCCESS', TaskStatus.SUCCESS, {}, TaskStatus.SUCCESS],
    [
      'a final FAIL keeps its outcome',
      TaskStatus.FAIL,
      { outcome: TaskStatus.FAIL },
      TaskStatus.FAIL,
    ],
    [
      'a cancelled FAIL keeps CANCELLED',
      TaskStatus.FAIL,
      { outcome: CANCELLED_OUTCOME },
      CANCELLED_OUTCOME,
    ],
    ['ROLLBACK ends as ROLLBACK', TaskStatus.ROLLBACK, {}, TaskStatus.ROLLBACK],
    [
      'a stopped permanent task ends CANCELLED',
      TaskStatus.SUCCESS,
      { ...permanent, cancelRequested: true },
      CANCELLED_OUTCOME,
    ],
  ] as [string, TaskStatus, Partial<TaskModel>, string][])('%s', (_name, status, over, outcome) => {
    const t = task({ status, ...over });
    const change = finishChange(t, status as never, NOW);
    expect(change).toMatchObject({
      to: TaskStatus.FINISH,
      patch: { outcome, finishedAt: NOW, dueAt: null },
    });
    expectAllowed(status, change);
  });

  it.each([
    ['asked for', { pendingAction: 'rollback' }, {}, true],
    ['the type rolls back failures', {}, { rollbackOnFail: true }, true],
    ['neither', {}, {}, false],
  ] as [string, Partial<TaskModel>, Partial<TaskTypeModel>, boolean][])(
    'rollback wanted: %s',
    (_name, over, typeOver, wanted) => {
      expect(wantsRollback(task(over), type(typeOver))).toBe(wanted);
    },
  );
});
