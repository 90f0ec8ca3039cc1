import { CANCELLED_OUTCOME, TaskStatus } from '@baton/task-contract';
import { NodeRow, NodeTask } from './node-state';
import { render } from './placeholders';
import { TRIGGER_RULES, TopologySpec, parseDefinition } from './topology-definition';
import { Plan, RunContext, evaluate, ruleVerdict, viewsOf } from './topology-evaluator';
import { PARENT_PAIRS, PARENT_STATE, RULE_TABLE, expectedCode } from './testing/trigger-rule-table';

const ctx = { taskTypes: new Set(['demo.echo']), topologies: new Set(['child']) };
const echo = (params: Record<string, unknown> = {}) => ({
  create_info: { task_type: 'demo.echo' },
  params,
});
const spec = (nodes: unknown[]): TopologySpec => parseDefinition({ name: 't', nodes }, ctx);
const run = (over: Partial<RunContext> = {}): RunContext => ({
  runId: 'R',
  name: 't',
  version: 1,
  input: { cluster: 'orders', hosts: ['a', 'b', 'c'] },
  paused: false,
  cancelling: false,
  rollingBack: false,
  deadlineAt: null,
  now: 1_000,
  ...over,
});

/** A tiny in-memory run: applies plans and ends tasks as told. */
class Sim {
  rows: NodeRow[] = [];
  tasks = new Map<string, NodeTask>();
  private n = 0;
  constructor(
    readonly s: TopologySpec,
    public r: RunContext = run(),
  ) {}
  step(): Plan {
    const plan = evaluate(this.s, this.r, this.rows, this.tasks);
    for (const st of plan.starts) {
      const taskId = `T${++this.n}`;
      this.rows.push({
        key: st.key,
        item: st.item,
        state: 'task',
        taskId,
        result: null,
        createdAt: 0,
        updatedAt: 0,
      });
      this.tasks.set(taskId, {
        taskId,
        status: TaskStatus.RUNNING,
        outcome: null,
        result: (st.body.params as Record<string, unknown>) ?? null,
        error: null,
        attempt: 1,
        progress: null,
        startedAt: 0,
        finishedAt: null,
        cancelRequested: false,
        pendingAction: null,
      });
    }
    for (const row of plan.rows) {
      const i = this.rows.findIndex((x) => x.key === row.key && x.item === row.item);
      const full = { ...row, taskId: null, createdAt: 0, updatedAt: 0 };
      // As the driver writes them: a row without `from` is inserted (a `done` one moves from
      // `waiting`), and its key is taken once.
      if (i >= 0 && row.from === undefined && row.state !== 'done')
        throw new Error(`row ${row.key}:${row.item} written anew over ${this.rows[i].state}`);
      if (i >= 0) this.rows[i] = { ...full, taskId: this.rows[i].taskId };
      else this.rows.push(full);
    }
    for (const id of plan.cancel) (this.tasks.get(id) as NodeTask).cancelRequested = true;
    return plan;
  }
  /** The node's task (item) ends CANCELLED, as a cancel through the worker contract ends it. */
  cancelled(key: string, item = 0): void {
    const row = this.rows.find((r) => r.key === key && r.item === item);
    const t = this.tasks.get(row?.taskId as string) as NodeTask;
    t.status = TaskStatus.FINISH;
    t.outcome = CANCELLED_OUTCOME;
  }
  /** Each node's status as the run view shows it. */
  statuses(): Record<string, string> {
    return Object.fromEntries(
      [...viewsOf(this.s, this.rows, this.tasks).values()].map((v) => [v.key, v.status]),
    );
  }
  /** Steps until the plan starts nothing new and finishes nothing (or finishes). */
  settle(): Plan {
    let plan = this.step();
    while (plan.starts.length > 0 && !plan.finish) plan = this.step();
    return plan;
  }
  end(key: string, ok = true, item = 0): void {
    const row = this.rows.find((r) => r.key === key && r.item === item);
    const t = this.tasks.get(row?.taskId as string) as NodeTask;
    t.status = TaskStatus.FINISH;
    t.outcome = ok ? TaskStatus.SUCCESS : TaskStatus.FAIL;
    if (!ok) t.error = { message: 'boom' };
  }
  started(plan: Plan): string[] {
    return plan.starts.map((s) => (s.item ? `${s.key}[${s.item}]` : s.key));
  }
}

const VERDICT = { r: 'run', k: 'skip', u: 'upstream_failed' } as const;

describe('ruleVerdict', () => {
  it('knows every rule it is asked for, and no other', () => {
    expect(Object.keys(RULE_TABLE).sort()).toEqual([...TRIGGER_RULES].sort());
  });
  const cases = TRIGGER_RULES.flatMap((rule) =>
    PARENT_PAIRS.map((pair) => {
      const code = expectedCode(rule, pair);
      return [
        rule,
        PARENT_STATE[pair[0] as 'S'],
        PARENT_STATE[pair[1] as 'S'],
        VERDICT[code],
      ] as const;
    }),
  );
  it.each(cases)('%s after %s and %s: %s', (rule, a, b, verdict) => {
    expect(ruleVerdict(rule, [a, b])).toBe(verdict);
    expect(ruleVerdict(rule, [b, a])).toBe(verdict);
  });
  it.each([
    ['all_success', ['SUCCESS', 'ACTIVE'], 'wait'],
    ['all_success', ['FAILED', 'ACTIVE'], 'upstream_failed'],
    ['all_success', ['SKIPPED', 'PENDING'], 'skip'],
    ['all_failed', ['SUCCESS', 'ACTIVE'], 'skip'],
    ['all_failed', ['FAILED', 'ACTIVE'], 'wait'],
    ['all_done', ['FAILED', 'ACTIVE'], 'wait'],
    ['all_skipped', ['SKIPPED', 'ACTIVE'], 'wait'],
    ['one_success', ['PENDING', 'SUCCESS'], 'run'],
    ['one_success', ['FAILED', 'ACTIVE'], 'wait'],
    ['one_failed', ['ACTIVE', 'FAILED'], 'run'],
    ['one_failed', ['SUCCESS', 'ACTIVE'], 'wait'],
    ['one_failed', ['ACTIVE', 'CANCELLED'], 'run'],
    ['one_failed', ['ROLLED_BACK', 'SUCCESS'], 'run'],
    ['one_done', ['ACTIVE', 'SKIPPED'], 'wait'],
    ['one_done', ['ACTIVE', 'FAILED'], 'run'],
    ['none_failed', ['SUCCESS', 'ACTIVE'], 'wait'],
    ['none_failed', ['UPSTREAM_FAILED', 'ACTIVE'], 'upstream_failed'],
    ['none_failed_min_one_success', ['SUCCESS', 'ACTIVE'], 'wait'],
    ['none_skipped', ['SKIPPED', 'ACTIVE'], 'skip'],
    ['always', ['PENDING', 'ACTIVE'], 'run'],
  ] as const)('%s over %j (not all ended): %s', (rule, parents, verdict) => {
    expect(ruleVerdict(rule, [...parents])).toBe(verdict);
  });
  it('runs a node without parents whatever its rule', () => {
    for (const rule of TRIGGER_RULES) expect(ruleVerdict(rule, [])).toBe('run');
  });
});

describe('evaluate', () => {
  it('walks a diamond, starting each node once when its parents ended, then finishes', () => {
    const sim = new Sim(
      spec([
        { key: 'A', task: echo({ c: '{{input.cluster}}' }) },
        { key: 'B', depends_on: ['A'], task: echo() },
        { key: 'C', depends_on: ['A'], task: echo() },
        { key: 'D', depends_on: ['B', 'C'], task: echo({ from: '{{nodes.A.result.c}}' }) },
      ]),
    );
    expect(sim.started(sim.step())).toEqual(['A']);
    expect(sim.started(sim.step())).toEqual([]); // the same state decides nothing new
    sim.end('A');
    expect(sim.started(sim.step())).toEqual(['B', 'C']);
    sim.end('B');
    expect(sim.started(sim.step())).toEqual([]);
    sim.end('C');
    const plan = sim.step();
    expect(plan.starts).toEqual([
      {
        key: 'D',
        item: 0,
        kind: 'task',
        body: {
          create_info: { task_name: 'D', task_type: 'demo.echo' },
          params: { from: 'orders' },
        },
      },
    ]);
    sim.end('D');
    expect(sim.step().finish).toEqual({
      outcome: 'SUCCESS',
      error: null,
      counts: { SUCCESS: 4 },
    });
  });

  it('fails the run on an unhandled failure, after the on-failure handlers ran', () => {
    const sim = new Sim(
      spec([
        { key: 'A', task: echo() },
        { key: 'B', depends_on: ['A'], task: echo() },
        { key: 'H', on_failure: true, task: echo() },
      ]),
    );
    sim.step();
    sim.end('A', false);
    const plan = sim.step();
    expect(plan.rows).toEqual([{ key: 'B', item: 0, state: 'upstream_failed', result: null }]);
    expect(sim.started(plan)).toEqual(['H']);
    expect(plan.finish).toBeUndefined();
    sim.end('H');
    expect(sim.step().finish).toEqual({
      outcome: 'FAIL',
      error: 'node A failed: boom',
      failedNodes: ['A', 'B'],
      // Counted with this evaluation's own decisions.
      counts: { FAILED: 1, UPSTREAM_FAILED: 1, SUCCESS: 1 },
    });
  });

  it('keeps a for_each list within its concurrency cap', () => {
    const sim = new Sim(
      spec([
        {
          key: 'each',
          for_each: '{{input.hosts}}',
          concurrency: 2,
          task: echo({ host: '{{item}}', i: '{{index}}' }),
        },
      ]),
    );
    const first = sim.step();
    expect(first.starts.map((s) => s.body.params)).toEqual([
      { host: 'a', i: 0 },
      { host: 'b', i: 1 },
    ]);
    expect(sim.started(sim.step())).toEqual([]);
    sim.end('each', true, 1);
    expect(sim.step().starts.map((s) => s.item)).toEqual([2]);
    sim.end('each', true, 0);
    sim.end('each', true, 2);
    expect(sim.step().finish?.outcome).toBe('SUCCESS');
  });

  it('starts nothing while paused, and cancels active tasks when cancelling', () => {
    const s = spec([
      { key: 'A', task: echo() },
      { key: 'B', task: echo() },
    ]);
    const paused = new Sim(s, run({ paused: true }));
    expect(paused.step().starts).toEqual([]);
    const sim = new Sim(s);
    sim.step();
    sim.end('A');
    const cancelling = new Sim(s, run({ cancelling: true }));
    cancelling.rows = sim.rows;
    cancelling.tasks = sim.tasks;
    const plan = cancelling.step();
    expect(plan.cancel).toEqual(['T2']);
    expect(plan.finish).toBeUndefined();
    cancelling.cancelled('B');
    expect(cancelling.step().finish).toEqual({
      outcome: 'CANCELLED',
      error: 'cancelled',
      failedNodes: [],
      counts: { SUCCESS: 1, CANCELLED: 1 },
    });
    expect(cancelling.statuses()).toEqual({ A: 'SUCCESS', B: 'CANCELLED' });
  });

  it('fails a node whose placeholder has no value, without a task', () => {
    const sim = new Sim(spec([{ key: 'A', task: echo({ x: '{{input.missing}}' }) }]));
    const plan = sim.step();
    expect(plan.starts).toEqual([]);
    expect(plan.rows).toEqual([
      {
        key: 'A',
        item: 0,
        state: 'failed',
        result: { error: '{{input.missing}} has no value in this run' },
      },
    ]);
    expect(sim.step().finish?.outcome).toBe('FAIL');
  });

  it('fails a wait whose placeholder gives a time more than 30 days away, as wait.seconds may not', () => {
    const far = new Date(1_000 + 31 * 86_400_000).toISOString();
    const near = new Date(1_000 + 29 * 86_400_000).toISOString();
    const waitFor = (at: string) =>
      new Sim(spec([{ key: 'W', wait: { until: '{{input.at}}' } }]), run({ input: { at } }));
    expect(waitFor(far).step().rows).toEqual([
      {
        key: 'W',
        item: 0,
        state: 'failed',
        result: { error: `wait.until ${far} is more than 30 days away` },
      },
    ]);
    expect(waitFor(near).step().rows[0]).toMatchObject({ state: 'waiting' });
    expect(waitFor('next tuesday').step().rows[0]).toMatchObject({
      state: 'failed',
      result: { error: expect.stringMatching(/does not give an RFC 3339 time/) },
    });
  });

  it('fails the run when a required step never ran, though an alert took the failure up', () => {
    // Airflow: the unrun step is upstream_failed and the DAG run fails.
    const sim = new Sim(
      spec([
        { key: 'A', task: echo() },
        { key: 'alert', depends_on: ['A'], trigger_rule: 'one_failed', task: echo() },
        { key: 'next', depends_on: ['A'], task: echo() },
      ]),
    );
    sim.step();
    sim.end('A', false);
    expect(sim.started(sim.step())).toEqual(['alert']);
    sim.end('alert');
    expect(sim.step().finish).toMatchObject({ outcome: 'FAIL', failedNodes: ['A', 'next'] });
    expect(sim.statuses()).toEqual({ A: 'FAILED', alert: 'SUCCESS', next: 'UPSTREAM_FAILED' });
  });

  it('fires an alert two levels below a failure, through the node between', () => {
    const sim = new Sim(
      spec([
        { key: 'A', task: echo() },
        { key: 'M', depends_on: ['A'], task: echo() },
        { key: 'alert', depends_on: ['M'], trigger_rule: 'one_failed', task: echo() },
      ]),
    );
    sim.step();
    sim.end('A', false);
    expect(sim.started(sim.step())).toEqual(['alert']);
    expect(sim.statuses().M).toBe('UPSTREAM_FAILED');
  });

  it('keeps a failure failed when a cleanup node (all_done) runs after it', () => {
    const sim = new Sim(
      spec([
        { key: 'A', task: echo() },
        { key: 'cleanup', depends_on: ['A'], trigger_rule: 'all_done', task: echo() },
      ]),
    );
    sim.step();
    sim.end('A', false);
    expect(sim.started(sim.step())).toEqual(['cleanup']);
    sim.end('cleanup');
    expect(sim.step().finish?.outcome).toBe('FAIL');
  });

  it('reports an optional node that failed without failing the run', () => {
    const sim = new Sim(
      spec([
        { key: 'lint', optional: true, task: echo() },
        { key: 'go', depends_on: ['lint'], trigger_rule: 'all_done', task: echo() },
      ]),
    );
    sim.step();
    sim.end('lint', false);
    expect(sim.started(sim.step())).toEqual(['go']);
    sim.end('go');
    expect(sim.step().finish).toEqual({
      outcome: 'SUCCESS',
      error: null,
      optionalFailed: ['lint'],
      counts: { FAILED: 1, SUCCESS: 1 },
    });
  });

  it('waits at a join after a switch for the taken branch, and fails with it', () => {
    const sim = new Sim(
      spec([
        {
          key: 'S',
          switch: { value: '{{input.cluster}}', cases: { orders: ['A1'], other: ['B'] } },
        },
        { key: 'A1', depends_on: ['S'], task: echo() },
        { key: 'A2', depends_on: ['A1'], task: echo() },
        { key: 'B', depends_on: ['S'], task: echo() },
        {
          key: 'join',
          depends_on: ['A2', 'B'],
          trigger_rule: 'none_failed_min_one_success',
          task: echo(),
        },
      ]),
    );
    expect(sim.started(sim.step())).toEqual(['A1']);
    sim.end('A1');
    expect(sim.started(sim.step())).toEqual(['A2']);
    expect(sim.statuses()).toMatchObject({ B: 'SKIPPED', join: 'PENDING' });
    sim.end('A2', false);
    expect(sim.step().finish).toMatchObject({ outcome: 'FAIL', failedNodes: ['A2', 'join'] });
    expect(sim.statuses().join).toBe('UPSTREAM_FAILED');
  });

  it('runs finally-nodes last, whatever the outcome, and they never change it', () => {
    const nodes = [
      { key: 'A', task: echo() },
      { key: 'H', on_failure: true, task: echo() },
      {
        key: 'F',
        finally: true,
        task: echo({
          outcome: '{{run.outcome}}',
          error: '{{run.error}}',
          failed: '{{run.failed_nodes}}',
          a: '{{nodes.A.status}} {{nodes.A.error}}',
        }),
      },
    ];
    const ok = new Sim(spec(nodes));
    ok.step();
    ok.end('A');
    const plan = ok.step();
    expect(sim0(plan)).toEqual([
      ['F', { outcome: 'SUCCESS', error: null, failed: [], a: 'SUCCESS null' }],
    ]);
    ok.end('F', false);
    expect(ok.step().finish).toEqual({
      outcome: 'SUCCESS',
      error: null,
      finallyFailed: ['F'],
      // The handler H was not needed: SKIPPED, not left PENDING on a finished run.
      counts: { SUCCESS: 1, SKIPPED: 1, FAILED: 1 },
    });

    const bad = new Sim(spec(nodes));
    bad.step();
    bad.end('A', false);
    expect(bad.started(bad.step())).toEqual(['H']);
    bad.end('H');
    expect(sim0(bad.step())).toEqual([
      [
        'F',
        {
          outcome: 'FAIL',
          error: 'node A failed: boom',
          failed: ['A'],
          a: 'FAILED boom',
        },
      ],
    ]);
    bad.end('F');
    expect(bad.step().finish).toEqual({
      outcome: 'FAIL',
      error: 'node A failed: boom',
      failedNodes: ['A'],
      counts: { FAILED: 1, SUCCESS: 2 },
    });
  });

  it('runs finally-nodes on a cancelled run once its tasks stopped, but not one that opted out', () => {
    const sim = new Sim(
      spec([
        { key: 'A', task: echo() },
        { key: 'B', depends_on: ['A'], task: echo() },
        { key: 'F', finally: true, task: echo() },
        { key: 'G', finally: { on_cancel: false }, task: echo() },
      ]),
    );
    sim.step();
    sim.r = run({ cancelling: true });
    const plan = sim.step();
    expect(plan.cancel).toEqual(['T1']);
    expect(plan.starts).toEqual([]);
    sim.cancelled('A');
    expect(sim.started(sim.step())).toEqual(['F']);
    expect(sim.statuses()).toEqual({ A: 'CANCELLED', B: 'CANCELLED', F: 'ACTIVE', G: 'SKIPPED' });
    sim.end('F');
    expect(sim.step().finish?.outcome).toBe('CANCELLED');
  });

  it('keeps the failed nodes on a run cancelled while its handler ran', () => {
    const sim = new Sim(
      spec([
        { key: 'A', task: echo() },
        { key: 'H', on_failure: true, task: echo() },
      ]),
    );
    sim.step();
    sim.end('A', false);
    expect(sim.started(sim.step())).toEqual(['H']);
    sim.r = run({ cancelling: true });
    expect(sim.step().cancel).toEqual(['T2']);
    sim.cancelled('H');
    expect(sim.step().finish).toMatchObject({ outcome: 'CANCELLED', failedNodes: ['A'] });
  });

  it('asks again for a finally-node re-run while the run is being cancelled', () => {
    const s = spec([
      { key: 'A', task: echo() },
      { key: 'F', finally: true, task: echo() },
    ]);
    const sim = new Sim(s);
    sim.step();
    sim.end('A');
    sim.step();
    sim.end('F');
    // F's row says its re-run (attempt 1 -> 2) was decided, and the task is still at attempt 1.
    const f = sim.rows.find((r) => r.key === 'F') as NodeRow;
    f.state = 'rerun';
    f.result = { from: 1 };
    sim.r = run({ cancelling: true });
    expect(sim.step().kicks.map((k) => k.taskId)).toEqual([f.taskId]);
  });

  it('fails fast: after the first failure no node starts, and with cancel the running stop', () => {
    const nodes = [
      { key: 'A', task: echo() },
      { key: 'B', task: echo() },
      { key: 'C', depends_on: ['B'], task: echo() },
      { key: 'each', for_each: '{{input.hosts}}', concurrency: 1, task: echo() },
      { key: 'H', on_failure: true, task: echo() },
    ];
    const fast = new Sim(parseDefinition({ name: 't', fail_fast: true, nodes }, ctx));
    expect(fast.started(fast.step())).toEqual(['A', 'B', 'each']);
    fast.end('A', false);
    const plan = fast.step();
    expect(plan.starts).toEqual([]);
    expect(plan.cancel).toEqual([]);
    fast.end('B');
    fast.end('each');
    // B's dependant and the fork's other items never start; the handler does.
    expect(fast.started(fast.step())).toEqual(['H']);
    expect(fast.statuses()).toMatchObject({ C: 'CANCELLED', each: 'CANCELLED' });
    fast.end('H');
    expect(fast.step().finish).toMatchObject({ outcome: 'FAIL', error: 'node A failed: boom' });

    const cancel = new Sim(parseDefinition({ name: 't', fail_fast: 'cancel', nodes }, ctx));
    cancel.step();
    cancel.end('A', false);
    expect(cancel.step().cancel).toEqual(['T2', 'T3']);
  });

  it('a deadline: looked at when it passes, then cuts the graph short; handlers and finally-nodes still run', () => {
    const nodes = [
      { key: 'A', task: echo() },
      { key: 'B', depends_on: ['A'], task: echo() },
      { key: 'C', task: echo() },
      { key: 'H', on_failure: true, task: echo({ why: '{{run.error}}' }) },
      { key: 'F', finally: true, task: echo({ outcome: '{{run.outcome}}' }) },
    ];
    const sim = new Sim(spec(nodes), run({ deadlineAt: 5_000 }));
    const first = sim.step();
    expect(sim.started(first)).toEqual(['A', 'C']);
    // Before it passes: the run is looked at again when it does.
    expect(first.wakeAt).toBe(5_000);
    sim.end('C');
    expect(sim.step().wakeAt).toBe(5_000);
    // It passes: B is never started, A's task is cancelled, nothing waits on the deadline.
    sim.r = run({ deadlineAt: 5_000, now: 5_000 });
    const cut = sim.step();
    expect(cut.starts).toEqual([]);
    expect(cut.cancel).toEqual(['T1']);
    expect(cut.wakeAt).toBeUndefined();
    expect(sim.statuses()).toMatchObject({ A: 'ACTIVE', B: 'CANCELLED', C: 'SUCCESS' });
    expect(sim.step().cancel).toEqual([]); // asked once
    sim.cancelled('A');
    const handlers = sim.step();
    expect(sim.started(handlers)).toEqual(['H']);
    expect(handlers.starts[0].body.params).toEqual({
      why: "the run's deadline passed: node A: cancelled: the run's deadline passed; node B: cancelled: the run's deadline passed",
    });
    sim.end('H');
    expect(sim.started(sim.step())).toEqual(['F']);
    sim.end('F');
    expect(sim.step().finish).toMatchObject({
      outcome: 'FAIL',
      reason: 'deadline',
      failedNodes: ['A', 'B'],
    });
  });

  it('a deadline that passes while handlers run does not take the blame for what failing fast cancelled', () => {
    const nodes = [
      { key: 'A', task: echo() },
      { key: 'B', task: echo() },
      { key: 'H', on_failure: true, task: echo({ why: '{{run.error}}' }) },
    ];
    const sim = new Sim(
      parseDefinition({ name: 't', fail_fast: 'cancel', nodes }, ctx),
      run({ deadlineAt: 5_000 }),
    );
    sim.step();
    sim.end('A', false);
    expect(sim.step().cancel).toEqual(['T2']);
    sim.cancelled('B');
    const handler = sim.step();
    expect(sim.started(handler)).toEqual(['H']);
    const why = handler.starts[0].body.params;
    // The deadline passes while the handler runs: the run's error and reason stay the failure's.
    sim.r = run({ deadlineAt: 5_000, now: 9_000 });
    expect(sim.step().cancel).toEqual([]);
    sim.end('H');
    const done = sim.step().finish;
    expect(done).toMatchObject({ outcome: 'FAIL' });
    expect(done?.reason).toBeUndefined();
    expect(why).toEqual({ why: done?.error });
  });

  it('a deadline that passes after the graph ended cuts nothing and is not the reason', () => {
    const nodes = [
      { key: 'A', task: echo() },
      { key: 'H', on_failure: true, task: echo() },
    ];
    const sim = new Sim(spec(nodes), run({ deadlineAt: 5_000 }));
    sim.step();
    sim.end('A', false);
    expect(sim.started(sim.step())).toEqual(['H']);
    sim.r = run({ deadlineAt: 5_000, now: 9_000 });
    const plan = sim.step();
    expect(plan.cancel).toEqual([]);
    expect(plan.wakeAt).toBeUndefined();
    sim.end('H');
    const done = sim.step().finish;
    expect(done).toMatchObject({ outcome: 'FAIL', error: 'node A failed: boom' });
    expect(done?.reason).toBeUndefined();
    // And a graph that succeeded before its deadline succeeds.
    const ok = new Sim(spec([{ key: 'A', task: echo() }]), run({ deadlineAt: 5_000 }));
    ok.step();
    ok.end('A');
    ok.r = run({ deadlineAt: 5_000, now: 6_000 });
    expect(ok.step().finish).toMatchObject({ outcome: 'SUCCESS' });
  });

  it('an approval waits until its timeout, which decides as the definition says', () => {
    const def = (on_timeout: string) =>
      spec([
        {
          key: 'G',
          approval: { timeout_seconds: 30, on_timeout, message: 'go for {{input.cluster}}?' },
        },
        { key: 'B', depends_on: ['G'], task: echo() },
      ]);
    const sim = new Sim(def('reject'));
    const first = sim.step();
    expect(first.rows).toEqual([
      {
        key: 'G',
        item: 0,
        state: 'waiting',
        result: {
          approval: true,
          until: 31_000,
          on_timeout: 'reject',
          message: 'go for orders?',
          approvers: { keys: [], roles: [] },
        },
      },
    ]);
    expect(first.wakeAt).toBe(31_000);
    expect(sim.statuses().G).toBe('ACTIVE');
    expect(sim.step().wakeAt).toBe(31_000);
    sim.r = run({ now: 31_000 });
    sim.step();
    expect(sim.statuses()).toMatchObject({ G: 'FAILED', B: 'UPSTREAM_FAILED' });
    expect(sim.step().finish).toMatchObject({
      outcome: 'FAIL',
      error: 'node G failed: no decision within 30 s: rejected by its timeout',
    });

    const yes = new Sim(def('approve'));
    yes.step();
    yes.r = run({ now: 31_000 });
    expect(yes.started(yes.step())).toEqual(['B']);
    expect(yes.statuses().G).toBe('SUCCESS');
  });

  it("counts a fan-out's items by how they ended, rolled back apart from failed", () => {
    const sim = new Sim(
      parseDefinition(
        {
          name: 't',
          rollback_on_failure: true,
          nodes: [{ key: 'each', for_each: '{{input.hosts}}', task: echo() }],
        },
        ctx,
      ),
    );
    sim.step();
    sim.end('each', true, 0);
    sim.end('each', false, 1);
    sim.end('each', true, 2);
    const plan = sim.step();
    expect(plan.rollbacks.map((r) => r.row.item).sort()).toEqual([0, 2]);
    for (const item of [0, 2]) {
      const t = sim.tasks.get(
        sim.rows.find((r) => r.key === 'each' && r.item === item)?.taskId as string,
      ) as NodeTask;
      t.outcome = TaskStatus.ROLLBACK;
    }
    expect(sim.step().finish?.error).toBe(
      'node each failed: 1 of 3 items failed; rolled back 2 node task(s)',
    );
  });

  it('ends a timed wait when its time has come, and says when to look again before', () => {
    const s = spec([
      { key: 'W', wait: { seconds: 5 } },
      { key: 'B', depends_on: ['W'], task: echo() },
    ]);
    const sim = new Sim(s);
    expect(sim.step().wakeAt).toBe(6_000);
    const later = new Sim(s, run({ now: 6_000 }));
    later.rows = sim.rows;
    const plan = later.step();
    expect(plan.rows[0]).toMatchObject({ key: 'W', state: 'done' });
    expect(later.started(plan)).toEqual(['B']);
  });
});

/** Each start's node and params. */
function sim0(plan: Plan): [string, unknown][] {
  return plan.starts.map((st) => [st.key, st.body.params]);
}

describe('render', () => {
  const scope = {
    input: { list: [1, 2], name: 'x' },
    run: { id: 'R', name: 't', version: 1 },
    nodes: { a: { status: 'SUCCESS', result: { n: 3 }, task_id: 'T', error: null } },
  };
  it('keeps a whole placeholder typed and writes one inside text', () => {
    expect(
      render({ l: '{{input.list}}', s: 'n={{nodes.a.result.n}} {{input.list}}' }, scope),
    ).toEqual({
      l: [1, 2],
      s: 'n=3 [1,2]',
    });
  });
});
