import { join } from 'node:path';
import { TRIGGER_RULES } from '../../apps/scheduler/src/topologies/topology-definition';
import {
  PARENT_PAIRS,
  RULE_TABLE,
  expectedCode,
} from '../../apps/scheduler/src/topologies/testing/trigger-rule-table';
import { Api } from '../support/baton';
import { InProcessBaton, startInProcess } from '../support/in-process';
import { Waits, manualTime } from '../support/waits';

jest.setTimeout(180_000);

/**
 * What a topology run says happened, case by case, against a real scheduler and template worker
 * on the embedded defaults (SQLite, memory queue, local locks, a ManualClock). Each case gives a
 * definition, what is done to the run, and the node states and outcome expected; its comment
 * names the peer behaviour it matches (Airflow, Conductor, Argo Workflows) or why it differs.
 */
type Json = Record<string, unknown>;
interface RunNode {
  key: string;
  status: string;
  task_id: string | null;
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
  result: Json | null;
}
interface Run {
  run_id: string;
  status: string;
  outcome: string | null;
  error: string | null;
  reason: string | null;
  deadline_at: string | null;
  failed_nodes: string[];
  optional_failed: string[];
  finally_failed: string[];
  nodes: RunNode[];
}

const echo = (params: Json = {}): Json => ({ create_info: { task_type: 'demo.echo' }, params });
const failing = (): Json => ({
  create_info: { task_type: 'demo.flaky' },
  params: { fail_times: 99 },
  process_arg: { max_retry: 0 },
});
/** Fails its first attempt, succeeds on the next (a retry of the run). */
const failsOnce = (): Json => ({
  create_info: { task_type: 'demo.flaky' },
  params: { fail_times: 1 },
  process_arg: { max_retry: 0 },
});
const sleeping = (seconds: number): Json => ({
  create_info: { task_type: 'demo.sleep' },
  params: { seconds, tick_ms: 500 },
});

let baton: InProcessBaton;
let waits: Waits;
let n = 0;

beforeAll(async () => {
  // A webhook receiver on loopback (nothing listens there: the messages are what is checked).
  baton = await startInProcess({ BATON_WEBHOOK_ALLOW: '127.0.0.1' });
  waits = manualTime(baton.clock, 200);
  await baton.addWorker('semantics-w', {
    WORKER_CAPACITY: '200',
    WORKER_ROLLBACK_DIR: join(baton.dir, 'rollback'),
  });
  await waits.eventually(
    async () => {
      const ws = (await baton.api.call<{ health: string }[]>('GET', '/v1/workers')).data;
      return ws.some((w) => w.health === 'healthy') ? true : undefined;
    },
    10_000,
    'a healthy worker',
  );
});
afterAll(async () => baton?.stop());

/** Saves the definition under a fresh name and starts a run of it: its id. */
async function start(def: Json, input: Json = {}, body: Json = {}): Promise<string> {
  const name = `sem-${++n}`;
  const saved = await baton.api.call('POST', '/v1/topologies', { name, ...def });
  expect(saved.message).toBe('ok');
  const run = await baton.api.call<Run>('POST', `/v1/topologies/${name}/runs`, {
    input,
    ...body,
  });
  expect(run.status).toBe(201);
  return run.data.run_id;
}

const read = async (id: string): Promise<Run> =>
  (await baton.api.call<Run>('GET', `/v1/topology-runs/${id}`)).data;

/** The run once `check` holds of it (the clock moved meanwhile). */
const until = (id: string, check: (r: Run) => boolean, what: string): Promise<Run> =>
  waits.eventually(
    async () => {
      const r = await read(id);
      return check(r) ? r : undefined;
    },
    120_000,
    `run ${id}: ${what}`,
  );
const finished = (id: string): Promise<Run> => until(id, (r) => r.status === 'FINISH', 'FINISH');

const states = (r: Run): Record<string, string> =>
  Object.fromEntries(r.nodes.map((x) => [x.key, x.status]));
const node = (r: Run, key: string): RunNode => r.nodes.find((x) => x.key === key) as RunNode;

interface HistoryEntry {
  kind: 'run' | 'repair' | 'execution' | 'decision';
  at: string;
  node: string | null;
  phase: string | null;
  status: string;
  task_id: string | null;
  attempt: number | null;
  ended_at: string | null;
  error: string | null;
  reason: string | null;
  actor: string | null;
  current: boolean;
}
const history = async (id: string): Promise<HistoryEntry[]> => {
  const res = await baton.api.call<{ run_id: string; entries: HistoryEntry[] }>(
    'GET',
    `/v1/topology-runs/${id}/history`,
  );
  expect(res.status).toBe(200);
  return res.data.entries;
};
/** A node's entries in the history, as `kind status [attempt] current|replaced`. */
const told = (h: HistoryEntry[], key: string): string[] =>
  h
    .filter((e) => e.node === key && e.kind !== 'repair')
    .map(
      (e) =>
        `${e.kind} ${e.status}${e.attempt !== null ? ` #${e.attempt}` : ''} ${e.current ? 'current' : 'replaced'}`,
    );

async function act(id: string, action: string, body: Json = {}): Promise<void> {
  const res = await baton.api.call('POST', `/v1/topology-runs/${id}/${action}`, body);
  expect(`${action}: ${res.status} ${res.message}`).toBe(`${action}: 200 ok`);
}

describe('every trigger rule over every pair of parent end states (one run, 110 nodes)', () => {
  // Airflow's trigger-rule table (RULE_TABLE, shared with the evaluator's unit test). Parents
  // that end SUCCESS (S), FAILED (F), SKIPPED (K: a one_failed node whose parent succeeded) and
  // UPSTREAM_FAILED (U: after a failure). Each rule's node is an echo: it ends SUCCESS when its
  // rule ran it.
  const STATUS: Record<string, string> = { r: 'SUCCESS', k: 'SKIPPED', u: 'UPSTREAM_FAILED' };
  let run: Run;

  beforeAll(async () => {
    const producers = [1, 2].flatMap((i) => [
      { key: `S${i}`, task: echo() },
      { key: `F${i}`, task: failing() },
      { key: `K${i}`, depends_on: [`S${i}`], trigger_rule: 'one_failed', task: echo() },
      { key: `U${i}`, depends_on: [`F${i}`], task: echo() },
    ]);
    const judged = TRIGGER_RULES.flatMap((rule) =>
      PARENT_PAIRS.map((pair) => ({
        key: `${rule}-${pair}`,
        depends_on: [`${pair[0]}1`, `${pair[1]}2`],
        trigger_rule: rule,
        task: echo(),
      })),
    );
    run = await finished(await start({ nodes: [...producers, ...judged] }));
  });

  it('has a case for every rule', () => {
    expect(Object.keys(RULE_TABLE).sort()).toEqual([...TRIGGER_RULES].sort());
  });

  it.each(
    TRIGGER_RULES.flatMap((rule) =>
      PARENT_PAIRS.map((pair) => [rule, pair, STATUS[expectedCode(rule, pair)]] as const),
    ),
  )('%s after %s ends %s', (rule, pair, expected) => {
    expect(node(run, `${rule}-${pair}`).status).toBe(expected);
  });

  it('fails the run: nodes failed and others were not run because of them', () => {
    expect(run.outcome).toBe('FAIL');
    expect(run.failed_nodes).toEqual(expect.arrayContaining(['F1', 'F2', 'U1', 'U2']));
  });
});

describe('topology semantics', () => {
  it('a failed step with an alert (one_failed) and a next step: FAIL, the next step UPSTREAM_FAILED', async () => {
    // Airflow: the all_success step is upstream_failed and the DAG run fails. Old Baton: SUCCESS.
    const r = await finished(
      await start({
        nodes: [
          { key: 'step', task: failing() },
          { key: 'alert', depends_on: ['step'], trigger_rule: 'one_failed', task: echo() },
          { key: 'next', depends_on: ['step'], task: echo() },
        ],
      }),
    );
    expect(states(r)).toEqual({ step: 'FAILED', alert: 'SUCCESS', next: 'UPSTREAM_FAILED' });
    expect(r.outcome).toBe('FAIL');
    expect(r.failed_nodes).toEqual(['step', 'next']);
    expect(node(r, 'next').error).toBe('not run: a node it needs failed');
    // ... and the run can be retried (old Baton answered 409: it had "succeeded").
    const retry = await baton.api.call('POST', `/v1/topology-runs/${r.run_id}/retry`);
    expect(retry.status).toBe(200);
  });

  it('an alert two levels below a failure fires through the node between', async () => {
    // Airflow: upstream_failed propagates and one_failed counts it. Old Baton: never fired.
    const r = await finished(
      await start({
        nodes: [
          { key: 'a', task: failing() },
          { key: 'b', depends_on: ['a'], task: echo() },
          { key: 'alert', depends_on: ['b'], trigger_rule: 'one_failed', task: echo() },
        ],
      }),
    );
    expect(states(r)).toEqual({ a: 'FAILED', b: 'UPSTREAM_FAILED', alert: 'SUCCESS' });
    expect(r.outcome).toBe('FAIL');
  });

  const afterSwitch = (rule: string, branchEnd: Json): Json => ({
    nodes: [
      { key: 'route', switch: { value: '{{input.mode}}', cases: { a: ['a1'], b: ['b1'] } } },
      { key: 'a1', depends_on: ['route'], task: echo() },
      { key: 'a2', depends_on: ['a1'], task: branchEnd },
      { key: 'b1', depends_on: ['route'], task: echo() },
      { key: 'join', depends_on: ['a2', 'b1'], trigger_rule: rule, task: echo() },
    ],
  });

  it('a one_success join after a switch starts only once the taken branch has ended', async () => {
    // Airflow one_success: fires on the first success; the untaken branch is skipped, not a success.
    const id = await start(afterSwitch('one_success', sleeping(5)), { mode: 'a' });
    await until(id, (x) => node(x, 'a2').status === 'ACTIVE', 'a2 under way');
    // While the taken branch runs, the join waits (the untaken branch is no success).
    await waits.holds(
      async () => {
        const x = await read(id);
        return node(x, 'a2').status !== 'ACTIVE' || node(x, 'join').status === 'PENDING';
      },
      3_000,
      'join pending while a2 runs',
    );
    const r = await finished(id);
    expect(states(r)).toMatchObject({ b1: 'SKIPPED', a2: 'SUCCESS', join: 'SUCCESS' });
    expect(r.outcome).toBe('SUCCESS');
  });

  it('a none_failed_min_one_success join after a switch waits for the branch and fails with it', async () => {
    // Airflow none_failed_min_one_success; Conductor's JOIN fails with a failed branch.
    const r = await finished(
      await start(afterSwitch('none_failed_min_one_success', failing()), { mode: 'a' }),
    );
    expect(states(r)).toMatchObject({ a2: 'FAILED', b1: 'SKIPPED', join: 'UPSTREAM_FAILED' });
    expect(r.outcome).toBe('FAIL');
  });

  it('an all_done join after a switch runs but does not hide the branch failure', async () => {
    // Airflow: the DAG run fails when a task failed, whatever ran after it. Old Baton: SUCCESS.
    const r = await finished(await start(afterSwitch('all_done', failing()), { mode: 'a' }));
    expect(states(r)).toMatchObject({ a2: 'FAILED', join: 'SUCCESS' });
    expect(r.outcome).toBe('FAIL');
    expect(r.failed_nodes).toEqual(['a2']);
  });

  it('a none_failed_min_one_success join after a switch succeeds with the taken branch', async () => {
    // Airflow: the skipped branch does not block it.
    const r = await finished(
      await start(afterSwitch('none_failed_min_one_success', echo()), { mode: 'b' }),
    );
    expect(states(r)).toMatchObject({
      a1: 'SKIPPED',
      a2: 'SKIPPED',
      b1: 'SUCCESS',
      join: 'SUCCESS',
    });
    expect(r.outcome).toBe('SUCCESS');
  });

  it('a switch after a failure does not choose: its cases are not run because of the failure', async () => {
    // Airflow: a branch operator downstream of a failure is upstream_failed, and so are its
    // branches; a one_failed alert below them fires.
    const r = await finished(
      await start({
        nodes: [
          { key: 'check', task: failing() },
          {
            key: 'route',
            depends_on: ['check'],
            switch: { value: '{{input.mode}}', cases: { a: ['promote'] } },
          },
          { key: 'promote', depends_on: ['route'], task: echo() },
          { key: 'alert', depends_on: ['promote'], trigger_rule: 'one_failed', task: echo() },
        ],
      }),
    );
    expect(states(r)).toEqual({
      check: 'FAILED',
      route: 'UPSTREAM_FAILED',
      promote: 'UPSTREAM_FAILED',
      alert: 'SUCCESS',
    });
  });

  it('a node that cannot start says why, and the run error names it', async () => {
    const r = await finished(
      await start({ nodes: [{ key: 'a', task: echo({ x: '{{input.missing}}' }) }] }),
    );
    expect(node(r, 'a').status).toBe('FAILED');
    expect(node(r, 'a').error).toBe('{{input.missing}} has no value in this run');
    expect(r.error).toBe('node a failed: {{input.missing}} has no value in this run');
  });

  it('a cleanup node (all_done) after a failed step runs, and the run still fails', async () => {
    // Airflow's teardown-style all_done: the run fails. Old Baton: SUCCESS ("handled").
    const r = await finished(
      await start({
        nodes: [
          { key: 'step', task: failing() },
          { key: 'cleanup', depends_on: ['step'], trigger_rule: 'all_done', task: echo() },
        ],
      }),
    );
    expect(states(r)).toEqual({ step: 'FAILED', cleanup: 'SUCCESS' });
    expect(r.outcome).toBe('FAIL');
  });

  it('a handler reads why the run failed: run.error, run.failed_nodes, nodes.X.error', async () => {
    // Conductor's failure workflow gets the reason; Argo's exit handler reads workflow.failures.
    // Old Baton refused these placeholders at save.
    const r = await finished(
      await start({
        nodes: [
          { key: 'step', task: failing() },
          { key: 'next', depends_on: ['step'], task: echo() },
          {
            key: 'page',
            on_failure: true,
            task: echo({
              error: '{{run.error}}',
              failed: '{{run.failed_nodes}}',
              why: '{{nodes.step.error}}',
              status: '{{nodes.next.status}}',
            }),
          },
        ],
      }),
    );
    expect(node(r, 'page').status).toBe('SUCCESS');
    const got = (node(r, 'page').result as { echo: Json }).echo;
    expect(got.error).toMatch(/^node step failed: /);
    expect(got.failed).toEqual(['step', 'next']);
    expect(got.why).toEqual(expect.any(String));
    expect(got.why).toBe(node(r, 'step').error);
    expect(got.status).toBe('UPSTREAM_FAILED');
    expect(r.error).toBe(got.error);
  });

  it('refuses run.error in a node of the run itself, at save', async () => {
    const res = await baton.api.call('POST', '/v1/topologies/check', {
      name: 'sem-refused',
      nodes: [{ key: 'a', task: echo({ e: '{{run.error}}' }) }],
    });
    expect(res.status).toBe(400);
    expect(res.message).toMatch(/only to on_failure and finally nodes/);
  });

  it('an optional node that fails is reported, and the run succeeds', async () => {
    // Argo's continueOn: failed; Airflow has no equivalent (a failed task fails the run).
    const r = await finished(
      await start({
        nodes: [
          { key: 'lint', optional: true, task: failing() },
          { key: 'deploy', depends_on: ['lint'], trigger_rule: 'all_done', task: echo() },
        ],
      }),
    );
    expect(states(r)).toEqual({ lint: 'FAILED', deploy: 'SUCCESS' });
    expect(r.outcome).toBe('SUCCESS');
    expect(r.optional_failed).toEqual(['lint']);
    expect(r.failed_nodes).toEqual([]);
  });

  it("an optional node's all_success dependant is not run, and that fails the run", async () => {
    // Only the optional node itself is forgiven; a required step it kept from running is not.
    const r = await finished(
      await start({
        nodes: [
          { key: 'lint', optional: true, task: failing() },
          { key: 'deploy', depends_on: ['lint'], task: echo() },
        ],
      }),
    );
    expect(states(r)).toEqual({ lint: 'FAILED', deploy: 'UPSTREAM_FAILED' });
    expect(r.outcome).toBe('FAIL');
    expect(r.failed_nodes).toEqual(['deploy']);
  });

  it('a finally node runs on success, sees the outcome, and its failure changes nothing', async () => {
    // Argo's onExit; Conductor has none on success. Its failure is reported (finally_failed).
    const r = await finished(
      await start({
        nodes: [
          { key: 'a', task: echo() },
          { key: 'report', finally: true, task: echo({ outcome: '{{run.outcome}}' }) },
          { key: 'broken', finally: true, task: failing() },
        ],
      }),
    );
    expect(states(r)).toEqual({ a: 'SUCCESS', report: 'SUCCESS', broken: 'FAILED' });
    expect(node(r, 'report').result).toEqual({ echo: { outcome: 'SUCCESS' } });
    expect(r.outcome).toBe('SUCCESS');
    expect(r.finally_failed).toEqual(['broken']);
    const events = await baton.api.events(r.run_id);
    expect(events.some((e) => /finally node\(s\) failed.*broken/.test(e.reason))).toBe(true);
  });

  it('a finally node runs after the handlers on failure, and the outcome stays FAIL', async () => {
    // Argo: exit handler after the failure; its own success does not change the outcome.
    const id = await start({
      nodes: [
        { key: 'a', task: failing() },
        { key: 'page', on_failure: true, task: sleeping(5) },
        {
          key: 'report',
          finally: true,
          task: echo({ outcome: '{{run.outcome}}', failed: '{{run.failed_nodes}}' }),
        },
      ],
    });
    await until(id, (x) => node(x, 'page').status === 'ACTIVE', 'the handler under way');
    await waits.holds(
      async () => {
        const x = await read(id);
        return node(x, 'page').status !== 'ACTIVE' || node(x, 'report').status === 'PENDING';
      },
      3_000,
      'the finally node waiting for the handler',
    );
    const r = await finished(id);
    expect(states(r)).toEqual({ a: 'FAILED', page: 'SUCCESS', report: 'SUCCESS' });
    expect(node(r, 'report').result).toEqual({ echo: { outcome: 'FAIL', failed: ['a'] } });
    expect(r.outcome).toBe('FAIL');
  });

  it('a cancel stops the running node, runs the finally node, and leaves out one that opted out', async () => {
    // Argo runs onExit on a stopped workflow (not on terminate); Airflow has no exit handler.
    const id = await start({
      nodes: [
        { key: 'long', task: sleeping(600) },
        { key: 'after', depends_on: ['long'], task: echo() },
        { key: 'cleanup', finally: true, task: echo({ outcome: '{{run.outcome}}' }) },
        { key: 'notify', finally: { on_cancel: false }, task: echo() },
      ],
    });
    await until(id, (r) => node(r, 'long').status === 'ACTIVE', 'long running');
    await act(id, 'cancel');
    const r = await finished(id);
    expect(states(r)).toEqual({
      long: 'CANCELLED',
      after: 'CANCELLED',
      cleanup: 'SUCCESS',
      notify: 'SKIPPED',
    });
    expect(node(r, 'cleanup').result).toEqual({ echo: { outcome: 'CANCELLED' } });
    expect(r.outcome).toBe('CANCELLED');
  });

  it('a deadline cancels the node under way, leaves the next unrun, runs handler and finally node, and fails with reason deadline', async () => {
    // Airflow's dagrun_timeout fails the run (no callbacks on the cut tasks' behalf); Argo's
    // activeDeadlineSeconds stops the pods and still runs onExit, as here.
    const def = {
      deadline_seconds: 3600,
      nodes: [
        { key: 'quick', task: echo() },
        { key: 'long', depends_on: ['quick'], task: sleeping(600) },
        { key: 'after', depends_on: ['long'], task: echo() },
        { key: 'page', on_failure: true, task: echo({ why: '{{run.error}}' }) },
        { key: 'report', finally: true, task: echo({ outcome: '{{run.outcome}}' }) },
      ],
    };
    // The run's own deadline (20 s) in place of the definition's hour.
    const id = await start(def, {}, { deadline_seconds: 20 });
    const started = await read(id);
    expect(Date.parse(started.deadline_at ?? '')).toBe(
      Date.parse((started as unknown as { created_at: string }).created_at) + 20_000,
    );
    await until(id, (r) => node(r, 'long').status === 'ACTIVE', 'long running');
    const r = await finished(id);
    expect(states(r)).toEqual({
      quick: 'SUCCESS',
      long: 'CANCELLED',
      after: 'CANCELLED',
      page: 'SUCCESS',
      report: 'SUCCESS',
    });
    expect(r.outcome).toBe('FAIL');
    expect(r.reason).toBe('deadline');
    expect(r.failed_nodes).toEqual(['long', 'after']);
    expect(r.error).toMatch(/^the run's deadline passed: /);
    expect(node(r, 'after').error).toBe("cancelled: the run's deadline passed");
    expect(node(r, 'page').result).toEqual({ echo: { why: r.error } });
    expect(node(r, 'report').result).toEqual({ echo: { outcome: 'FAIL' } });
    // Not before the deadline: the long node was cut 20 s after the start, not at once.
    expect(Date.parse(node(r, 'long').finished_at ?? '')).toBeGreaterThanOrEqual(
      Date.parse(started.deadline_at ?? ''),
    );
    // A retry has the whole deadline again, from the retry: its nodes run, not cut at once.
    await act(id, 'retry');
    const again = await read(id);
    expect(Date.parse(again.deadline_at ?? '')).toBeGreaterThan(
      Date.parse(started.deadline_at ?? ''),
    );
    expect(again.reason).toBeNull();
    await until(id, (x) => node(x, 'long').status === 'ACTIVE', 'long running again');
    expect(node(await read(id), 'after').status).toBe('PENDING');
    await act(id, 'cancel');
    const cancelled = await finished(id);
    expect(cancelled.reason).toBe('cancelled');
  });

  it('refuses a deadline that is not a whole number of seconds, at save and at start', async () => {
    const bad = await baton.api.call('POST', '/v1/topologies', {
      name: `sem-bad-${++n}`,
      deadline_seconds: 0,
      nodes: [{ key: 'a', task: echo() }],
    });
    expect(bad.status).toBe(400);
    expect(bad.message).toMatch(/deadline_seconds/);
    const name = `sem-${++n}`;
    expect(
      (
        await baton.api.call('POST', '/v1/topologies', {
          name,
          nodes: [{ key: 'a', task: echo() }],
        })
      ).status,
    ).toBe(201);
    const res = await baton.api.call('POST', `/v1/topologies/${name}/runs`, {
      deadline_seconds: 1.5,
    });
    expect(res.status).toBe(400);
    expect(res.message).toMatch(/deadline_seconds/);
  });

  describe('approval nodes', () => {
    let alice: Api;
    let bob: Api;
    let viewer: Api;
    const key = async (name: string, role: string): Promise<Api> => {
      const res = await baton.api.call<{ key: string }>('POST', '/v1/api-keys', { name, role });
      expect(res.status).toBe(201);
      return new Api(baton.api.base, res.data.key);
    };
    beforeAll(async () => {
      alice = await key('sem-alice', 'operator');
      bob = await key('sem-bob', 'operator');
      viewer = await key('sem-viewer', 'viewer');
    });
    const gated = (approval: Json): Json => ({
      nodes: [
        { key: 'check', task: echo() },
        { key: 'gate', depends_on: ['check'], approval },
        { key: 'after', depends_on: ['gate'], task: echo({ by: '{{nodes.gate.result.by}}' }) },
        { key: 'page', on_failure: true, task: echo({ why: '{{run.error}}' }) },
      ],
    });
    const decide = (as: Api, id: string, verdict: string, comment?: string) =>
      as.call<Run>(
        'POST',
        `/v1/topology-runs/${id}/nodes/gate/${verdict}`,
        comment ? { comment } : {},
      );

    it('an allowed key approves: the run goes on; who, when and why are in the history and the audit log; others are refused', async () => {
      // Conductor's HUMAN task completed through its API; Argo's suspend resumed. Here the
      // definition names who may decide, and the decision is kept.
      const hook = await baton.api.call<{ webhook_id: string }>('POST', '/v1/webhooks', {
        url: 'http://127.0.0.1:9/approvals',
        events: ['topology.approval_requested'],
        labels: { approval_case: 'approve' },
      });
      expect(hook.status).toBe(201);
      const id = await start(
        gated({
          timeout_seconds: 3600,
          on_timeout: 'reject',
          message: 'Fail over {{input.cluster}}?',
          approvers: { keys: ['sem-alice'] },
        }),
        { cluster: 'orders' },
        { labels: { approval_case: 'approve' } },
      );
      await until(id, (r) => node(r, 'gate').status === 'ACTIVE', 'waiting for a decision');
      // The page of waiting approvals, as each key sees it.
      const asked = async (as: Api) =>
        (
          await as.call<{ items: { run_id: string; message: string; may_decide: boolean }[] }>(
            'GET',
            '/v1/topology-approvals',
          )
        ).data.items.find((a) => a.run_id === id);
      expect(await asked(alice)).toMatchObject({ message: 'Fail over orders?', may_decide: true });
      expect(await asked(bob)).toMatchObject({ may_decide: false });
      // One webhook message, saying what is asked and of whom.
      const sent = await baton.api.call<{ event_type: string; payload: { data: Json } }[]>(
        'GET',
        `/v1/tasks/${id}/deliveries`,
      );
      expect(sent.data.map((d) => d.event_type)).toEqual(['topology.approval_requested']);
      expect(sent.data[0].payload.data).toMatchObject({
        run_id: id,
        node: 'gate',
        message: 'Fail over orders?',
        approvers: { keys: ['sem-alice'], roles: [] },
        on_timeout: 'reject',
      });

      // Not allowed: another operator (403, says who may), a viewer (403): nothing changes.
      const refused = await decide(bob, id, 'approve');
      expect(refused.status).toBe(403);
      expect(refused.message).toMatch(/key:sem-bob may not decide node gate: .*sem-alice/);
      expect((await decide(viewer, id, 'reject')).status).toBe(403);
      expect(node(await read(id), 'gate').status).toBe('ACTIVE');

      const ok = await decide(alice, id, 'approve', 'replica lag checked');
      expect(ok.status).toBe(200);
      const r = await finished(id);
      expect(states(r)).toEqual({
        check: 'SUCCESS',
        gate: 'SUCCESS',
        after: 'SUCCESS',
        page: 'SKIPPED',
      });
      expect(node(r, 'gate').result).toMatchObject({
        decision: 'approved',
        by: 'key:sem-alice',
        comment: 'replica lag checked',
      });
      expect(node(r, 'after').result).toEqual({ echo: { by: 'key:sem-alice' } });
      // Decided once: a second decision is refused.
      const again = await decide(alice, id, 'reject');
      expect(again.status).toBe(409);
      expect(again.message).toMatch(/not waiting for a decision \(approved by key:sem-alice\)/);

      const h = await history(id);
      expect(h.find((e) => e.node === 'gate' && e.current)).toMatchObject({
        kind: 'decision',
        status: 'SUCCESS',
        reason: 'approved by key:sem-alice: replica lag checked',
        actor: 'key:sem-alice',
      });
      const audit = await baton.api.call<{ actor: string; target: string; detail: Json }[]>(
        'GET',
        '/v1/audit?action=topology_run.approve',
      );
      expect(audit.data.find((a) => a.target === `${id}/gate`)).toMatchObject({
        actor: 'key:sem-alice',
        detail: { comment: 'replica lag checked' },
      });
    });

    it('a viewer named as approver may not decide, and nobody decides once the timeout has passed', async () => {
      const id = await start(
        gated({
          timeout_seconds: 30,
          on_timeout: 'reject',
          approvers: { keys: ['sem-viewer', 'sem-alice'] },
        }),
      );
      await until(id, (r) => node(r, 'gate').status === 'ACTIVE', 'waiting for a decision');
      const asked = await viewer.call<{ items: { run_id: string; may_decide: boolean }[] }>(
        'GET',
        '/v1/topology-approvals',
      );
      expect(asked.data.items.find((a) => a.run_id === id)).toMatchObject({ may_decide: false });
      expect((await decide(viewer, id, 'approve')).status).toBe(403);
      // Past its timeout the decision is the timeout's (refused as such whether or not the run
      // was looked at again since).
      await baton.clock.advance(31_000);
      const late = await decide(alice, id, 'approve');
      expect(late.status).toBe(409);
      expect(late.message).toMatch(/its timeout decides \(reject\)|rejected by timeout/);
      const r = await finished(id);
      expect(node(r, 'gate').error).toBe('no decision within 30 s: rejected by its timeout');
    });

    it('a rejection fails the node with who and why; the run fails and its handler runs', async () => {
      // Conductor: a HUMAN task failed through its API fails the workflow.
      const id = await start(gated({ timeout_seconds: 3600, on_timeout: 'approve' }));
      await until(id, (r) => node(r, 'gate').status === 'ACTIVE', 'waiting for a decision');
      // No approvers named: any operator decides.
      expect((await decide(bob, id, 'reject', 'not during the sale')).status).toBe(200);
      const r = await finished(id);
      expect(states(r)).toEqual({
        check: 'SUCCESS',
        gate: 'FAILED',
        after: 'UPSTREAM_FAILED',
        page: 'SUCCESS',
      });
      expect(node(r, 'gate').error).toBe('rejected by key:sem-bob: not during the sale');
      expect(r.error).toBe('node gate failed: rejected by key:sem-bob: not during the sale');
      expect(r.failed_nodes).toEqual(['gate', 'after']);
    });

    it('without a decision its timeout decides: reject fails it, approve lets the run go on', async () => {
      // Conductor's HUMAN task timeoutSeconds fails it; here the definition chooses, and says so.
      const rejected = await start(gated({ timeout_seconds: 30, on_timeout: 'reject' }));
      const approved = await start(gated({ timeout_seconds: 30, on_timeout: 'approve' }));
      const r = await finished(rejected);
      expect(node(r, 'gate').status).toBe('FAILED');
      expect(node(r, 'gate').error).toBe('no decision within 30 s: rejected by its timeout');
      expect(r.outcome).toBe('FAIL');
      const a = await finished(approved);
      expect(states(a)).toMatchObject({ gate: 'SUCCESS', after: 'SUCCESS' });
      expect(node(a, 'gate').result).toMatchObject({ decision: 'approved', by: 'timeout' });
      expect(node(a, 'after').result).toEqual({ echo: { by: 'timeout' } });
      expect(a.outcome).toBe('SUCCESS');
      // Not before its time: decided 30 s after it began to wait.
      const h = await history(approved);
      const began = h.find((e) => e.node === 'check' && e.kind === 'execution');
      const decided = h.find((e) => e.node === 'gate' && e.current);
      expect(Date.parse(decided?.at ?? '') - Date.parse(began?.at ?? '')).toBeGreaterThanOrEqual(
        30_000,
      );
    });

    it('refuses an approval without its timeout, and a decision on a node that is not an approval', async () => {
      const bad = await baton.api.call('POST', '/v1/topologies', {
        name: `sem-bad-${++n}`,
        nodes: [{ key: 'gate', approval: { on_timeout: 'reject' } }],
      });
      expect(bad.status).toBe(400);
      expect(bad.message).toMatch(/node gate: approval.timeout_seconds is required/);
      const id = await start({ nodes: [{ key: 'gate', task: sleeping(5) }] });
      const res = await decide(alice, id, 'approve');
      expect(res.status).toBe(400);
      expect(res.message).toMatch(/not an approval node/);
      await finished(id);
    });
  });

  it('fail_fast: after the first failure no new node starts; the running one finishes', async () => {
    // Conductor fails the workflow at the first failed task; Argo's failFast for parallel steps.
    const r = await finished(
      await start({
        fail_fast: true,
        nodes: [
          { key: 'bad', task: failing() },
          { key: 'slow', task: sleeping(30) },
          { key: 'after', depends_on: ['slow'], task: echo() },
          { key: 'page', on_failure: true, task: echo() },
        ],
      }),
    );
    expect(states(r)).toEqual({
      bad: 'FAILED',
      slow: 'SUCCESS',
      after: 'CANCELLED',
      page: 'SUCCESS',
    });
    expect(node(r, 'after').error).toBe('cancelled: the run failed fast');
    expect(r.outcome).toBe('FAIL');
  });

  it('fail_fast: cancel also cancels the nodes under way', async () => {
    const r = await finished(
      await start({
        fail_fast: 'cancel',
        nodes: [
          { key: 'bad', depends_on: ['wait'], task: failing() },
          { key: 'wait', wait: { seconds: 1 } },
          { key: 'slow', task: sleeping(600) },
        ],
      }),
    );
    expect(states(r)).toEqual({ wait: 'SUCCESS', bad: 'FAILED', slow: 'CANCELLED' });
    expect(r.outcome).toBe('FAIL');
  });

  it('without fail_fast an independent branch goes on after a failure', async () => {
    // Airflow's default: other branches run to their end.
    const r = await finished(
      await start({
        nodes: [
          { key: 'bad', task: failing() },
          { key: 'other', task: echo() },
          { key: 'after', depends_on: ['other'], task: echo() },
        ],
      }),
    );
    expect(states(r)).toEqual({ bad: 'FAILED', other: 'SUCCESS', after: 'SUCCESS' });
    expect(r.outcome).toBe('FAIL');
  });

  it('an empty fan-out succeeds at once and its dependant runs', async () => {
    // Airflow's dynamic mapping over an empty list skips; Argo's withItems over [] succeeds.
    const r = await finished(
      await start(
        {
          nodes: [
            { key: 'each', for_each: '{{input.hosts}}', task: echo({ h: '{{item}}' }) },
            { key: 'after', depends_on: ['each'], task: echo() },
          ],
        },
        { hosts: [] },
      ),
    );
    expect(states(r)).toEqual({ each: 'SUCCESS', after: 'SUCCESS' });
    expect(r.outcome).toBe('SUCCESS');
  });

  it("a fan-out node took from its first item's start to its last one's end", async () => {
    // The console showed "Took 0 ms": the node's own row is written when it ends.
    const r = await finished(
      await start(
        {
          nodes: [
            {
              key: 'each',
              for_each: '{{input.items}}',
              task: { create_info: { task_type: 'demo.sleep' }, params: { seconds: '{{item}}' } },
            },
          ],
        },
        { items: [1, 2] },
      ),
    );
    const each = node(r, 'each');
    const took = Date.parse(each.finished_at ?? '') - Date.parse(each.started_at ?? '');
    expect(took).toBeGreaterThanOrEqual(2000);
  });

  it('a fan-out with one failing item fails, counts it, and its dependant is not run', async () => {
    // Argo: a failed item fails the step unless continueOn; the others still run.
    const r = await finished(
      await start(
        {
          nodes: [
            {
              key: 'each',
              for_each: '{{input.items}}',
              task: {
                create_info: { task_type: 'demo.flaky' },
                params: { fail_times: '{{item}}' },
                process_arg: { max_retry: 0 },
              },
            },
            { key: 'after', depends_on: ['each'], task: echo() },
          ],
        },
        { items: [0, 99, 0] },
      ),
    );
    expect(states(r)).toEqual({ each: 'FAILED', after: 'UPSTREAM_FAILED' });
    expect(node(r, 'each').result).toMatchObject({ count: 3, succeeded: 2, failed: 1 });
    expect(r.error).toBe('node each failed: 1 of 3 items failed');
  });

  it('a partial rollback after a fan-out counts what failed and what was undone', async () => {
    // Old Baton: "3 of 3 items failed" (rolled-back items counted as failed).
    const r = await finished(
      await start(
        {
          rollback_on_failure: true,
          nodes: [
            {
              key: 'each',
              for_each: '{{input.items}}',
              task: { create_info: { task_type: 'demo.rollback' }, params: { fail: '{{item}}' } },
            },
          ],
        },
        { items: [false, true, false] },
      ),
    );
    expect(r.outcome).toBe('FAIL');
    expect(r.error).toBe('node each failed: 1 of 3 items failed; rolled back 2 node task(s)');
    expect(node(r, 'each').result).toMatchObject({ failed: 1, rolled_back: 2 });
  });

  it('a failed run with rollback undoes a sub-topology that succeeded: its nodes latest first, then the nodes before it', async () => {
    // Old Baton left succeeded child runs as they were. Conductor compensates a sub-workflow only
    // through its own failure workflow; here the child run is one node of the parent's saga.
    const undoable = { create_info: { task_type: 'demo.rollback' }, params: {} };
    const child = `sem-child-rb-${++n}`;
    expect(
      (
        await baton.api.call('POST', '/v1/topologies', {
          name: child,
          nodes: [
            { key: 'x', task: undoable },
            { key: 'y', depends_on: ['x'], task: undoable },
          ],
        })
      ).message,
    ).toBe('ok');
    const parentId = await start({
      rollback_on_failure: true,
      nodes: [
        { key: 'a', task: undoable },
        { key: 'sub', depends_on: ['a'], topology: { name: child, input: {} } },
        { key: 'c', depends_on: ['sub'], task: failing() },
      ],
    });
    const r = await finished(parentId);
    expect(states(r)).toEqual({ a: 'ROLLED_BACK', sub: 'ROLLED_BACK', c: 'FAILED' });
    expect(r.outcome).toBe('FAIL');
    expect(r.error).toMatch(/^node c failed: .*; rolled back 2 node task\(s\)$/);
    // The child run was undone as a whole and says so.
    const childRun = await read(node(r, 'sub').task_id as string);
    expect(childRun).toMatchObject({
      status: 'FINISH',
      outcome: 'ROLLBACK',
      reason: 'rolled_back',
    });
    expect(states(childRun)).toEqual({ x: 'ROLLED_BACK', y: 'ROLLED_BACK' });
    // In reverse order across the nesting: y, then x (inside the child), then a (before it).
    const asked = async (taskId: string): Promise<number> => {
      const events = await baton.api.events(taskId);
      const e = events.find((x) => x.reason === 'rollback requested') as { id?: number };
      expect(e).toBeDefined();
      return Number(e.id);
    };
    const [y, x, a] = [
      await asked(node(childRun, 'y').task_id as string),
      await asked(node(childRun, 'x').task_id as string),
      await asked(node(r, 'a').task_id as string),
    ];
    expect(y).toBeLessThan(x);
    expect(x).toBeLessThan(a);
  });

  it('retry from failed runs the failed node and the ones not run because of it', async () => {
    // Airflow's "clear failed and downstream"; Conductor's retry from the failed task.
    const id = await start({
      nodes: [
        { key: 'a', task: failsOnce() },
        { key: 'b', depends_on: ['a'], task: echo() },
        { key: 'page', on_failure: true, task: echo() },
      ],
    });
    const failed = await finished(id);
    expect(states(failed)).toEqual({ a: 'FAILED', b: 'UPSTREAM_FAILED', page: 'SUCCESS' });
    await act(id, 'retry');
    const r = await until(id, (x) => x.status === 'FINISH' && x.outcome === 'SUCCESS', 'SUCCESS');
    expect(states(r)).toMatchObject({ a: 'SUCCESS', b: 'SUCCESS' });
    expect(r.failed_nodes).toEqual([]);
    // The history keeps the first attempt, the handler's run and what the retry decided again
    // (Airflow keeps each try of a task instance; Conductor each retried task).
    const h = await history(id);
    expect(told(h, 'a')).toEqual(['execution FAIL #1 replaced', 'execution SUCCESS #2 current']);
    expect(told(h, 'b')).toEqual([
      'decision UPSTREAM_FAILED replaced',
      'execution SUCCESS #1 current',
    ]);
    expect(told(h, 'page')).toEqual(['execution SUCCESS #1 replaced', ...told(h, 'page').slice(1)]);
    expect(node(r, 'page')).toMatchObject({ status: 'SKIPPED' });
    expect(told(h, 'page')).toHaveLength(2);
    expect(h.find((e) => e.node === 'a' && e.attempt === 1)?.error).toBeTruthy();
    const retry = h.find((e) => e.kind === 'repair');
    expect(retry).toMatchObject({ status: 'retry', node: null });
    expect(retry?.actor).toMatch(/^key:/);
    // The run's own moves: it finished FAIL, was reopened by the retry, and finished again.
    const moves = h.filter((e) => e.kind === 'run' && e.status === 'FINISH');
    expect(moves).toHaveLength(2);
    expect(h.some((e) => e.kind === 'run' && e.reason === 'retry from the failed nodes')).toBe(
      true,
    );
    // In time order: the first attempt before the retry, the second after it.
    const at = (e?: HistoryEntry): number => Date.parse(e?.at ?? '');
    expect(at(h.find((e) => e.node === 'a' && e.attempt === 1))).toBeLessThanOrEqual(at(retry));
    expect(at(h.find((e) => e.node === 'a' && e.attempt === 2))).toBeGreaterThanOrEqual(at(retry));
  });

  it('a person skips an upstream-failed node and its dependants go on', async () => {
    const id = await start({
      nodes: [
        { key: 'a', task: failing() },
        { key: 'b', depends_on: ['a'], task: echo() },
        { key: 'c', depends_on: ['b'], task: echo() },
        { key: 'gate', wait: { signal: 'go' } },
        { key: 'd', depends_on: ['gate'], task: echo() },
      ],
    });
    await until(id, (r) => node(r, 'c').status === 'UPSTREAM_FAILED', 'c upstream-failed');
    await act(id, 'nodes/b/skip');
    await until(id, (r) => node(r, 'c').status === 'SUCCESS', 'c run after the skip');
    await act(id, 'signal', { signal: 'go' });
    const r = await finished(id);
    expect(states(r)).toEqual({
      a: 'FAILED',
      b: 'SKIPPED',
      c: 'SUCCESS',
      gate: 'SUCCESS',
      d: 'SUCCESS',
    });
    expect(r.outcome).toBe('FAIL');
    const h = await history(id);
    expect(told(h, 'b')).toEqual(['decision UPSTREAM_FAILED replaced', 'decision SKIPPED current']);
    expect(told(h, 'c')).toEqual([
      'decision UPSTREAM_FAILED replaced',
      'execution SUCCESS #1 current',
    ]);
    expect(h.find((e) => e.kind === 'repair')).toMatchObject({ status: 'skip', node: 'b' });
    expect(h.find((e) => e.node === 'b' && e.current)?.actor).toMatch(/^key:/);
  });

  it('a paused run starts nothing until continued', async () => {
    const id = await start({
      nodes: [
        { key: 'gate', wait: { signal: 'go' } },
        { key: 'after', depends_on: ['gate'], task: echo() },
      ],
    });
    await until(id, (r) => node(r, 'gate').status === 'ACTIVE', 'waiting');
    await act(id, 'pause');
    await act(id, 'signal', { signal: 'go' });
    await waits.holds(
      async () => node(await read(id), 'after').status === 'PENDING',
      5_000,
      'after pending while paused',
    );
    await act(id, 'continue');
    const r = await finished(id);
    expect(states(r)).toEqual({ gate: 'SUCCESS', after: 'SUCCESS' });
  });

  it('a failed sub-topology fails its node, and the nodes after it are not run', async () => {
    // Argo's nested template failure; Conductor's SUB_WORKFLOW fails its parent task.
    const child = `sem-child-${++n}`;
    expect(
      (
        await baton.api.call('POST', '/v1/topologies', {
          name: child,
          nodes: [{ key: 'x', task: failing() }],
        })
      ).message,
    ).toBe('ok');
    const r = await finished(
      await start({
        nodes: [
          { key: 'sub', topology: { name: child, input: {} } },
          { key: 'after', depends_on: ['sub'], task: echo() },
        ],
      }),
    );
    expect(states(r)).toEqual({ sub: 'FAILED', after: 'UPSTREAM_FAILED' });
    expect(r.outcome).toBe('FAIL');
  });

  it('a node re-run re-runs it and what follows, keeping what came before', async () => {
    const id = await start({
      nodes: [
        { key: 'a', task: echo() },
        { key: 'b', depends_on: ['a'], task: echo() },
        { key: 'c', depends_on: ['b'], task: echo() },
      ],
    });
    const first = await finished(id);
    await act(id, 'nodes/b/rerun');
    const r = await until(
      id,
      (x) => x.status === 'FINISH' && node(x, 'c').finished_at !== node(first, 'c').finished_at,
      'c again',
    );
    expect(states(r)).toEqual({ a: 'SUCCESS', b: 'SUCCESS', c: 'SUCCESS' });
    expect(node(r, 'a').finished_at).toBe(node(first, 'a').finished_at);
    expect(r.outcome).toBe('SUCCESS');
    // The re-run adds attempts; the first ones stay.
    const h = await history(id);
    expect(told(h, 'a')).toEqual(['execution SUCCESS #1 current']);
    expect(told(h, 'b')).toEqual(['execution SUCCESS #1 replaced', 'execution SUCCESS #2 current']);
    expect(told(h, 'c')).toEqual(['execution SUCCESS #1 replaced', 'execution SUCCESS #2 current']);
    expect(h.find((e) => e.kind === 'repair')).toMatchObject({ status: 'rerun', node: 'b' });
  });
});
