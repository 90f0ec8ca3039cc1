import { TaskStatus } from '@baton/task-contract';
import { NodeRow, NodeTask } from './node-state';
import { render } from './placeholders';
import { TopologySpec, parseDefinition } from './topology-definition';
import { Plan, RunContext, evaluate, ruleVerdict } from './topology-evaluator';

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
    readonly r: RunContext = run(),
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
      if (i >= 0) this.rows[i] = full;
      else this.rows.push(full);
    }
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

describe('ruleVerdict', () => {
  it.each([
    ['all_success', ['SUCCESS', 'SUCCESS'], 'run'],
    ['all_success', ['SUCCESS', 'ACTIVE'], 'wait'],
    ['all_success', ['FAILED', 'ACTIVE'], 'skip'],
    ['all_success', ['SKIPPED', 'SUCCESS'], 'skip'],
    ['all_done', ['FAILED', 'SKIPPED'], 'run'],
    ['all_done', ['FAILED', 'ACTIVE'], 'wait'],
    ['one_success', ['PENDING', 'SUCCESS'], 'run'],
    ['one_success', ['FAILED', 'SKIPPED'], 'skip'],
    ['one_failed', ['ACTIVE', 'FAILED'], 'run'],
    ['one_failed', ['SUCCESS', 'SUCCESS'], 'skip'],
    ['one_failed', ['SUCCESS', 'ACTIVE'], 'wait'],
  ] as const)('%s over %j: %s', (rule, parents, verdict) => {
    expect(ruleVerdict(rule, [...parents])).toBe(verdict);
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
    expect(sim.step().finish).toEqual({ outcome: 'SUCCESS', error: null });
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
    expect(plan.rows).toEqual([{ key: 'B', item: 0, state: 'skipped', result: null }]);
    expect(sim.started(plan)).toEqual(['H']);
    expect(plan.finish).toBeUndefined();
    sim.end('H');
    expect(sim.step().finish).toEqual({ outcome: 'FAIL', error: 'node A failed: boom' });
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
    cancelling.end('B', false);
    expect(cancelling.step().finish).toEqual({ outcome: 'CANCELLED', error: 'cancelled' });
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

describe('render', () => {
  const scope = {
    input: { list: [1, 2], name: 'x' },
    run: { id: 'R', name: 't', version: 1 },
    nodes: { a: { status: 'SUCCESS', result: { n: 3 }, task_id: 'T' } },
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
