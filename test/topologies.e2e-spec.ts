import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunInterval, readRunLogs } from '../apps/worker-template/src/run-log/run-log-analysis';
import {
  Api,
  Backend,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually } from './support/processes';

jest.setTimeout(240_000);

type Json = Record<string, unknown>;
interface RunNode {
  key: string;
  status: string;
  task_id: string | null;
  result: Json | null;
  items?: Record<string, number>;
}
interface Run {
  run_id: string;
  status: string;
  outcome: string | null;
  error: string | null;
  failed_nodes: string[];
  parent_run_id: string | null;
  nodes: RunNode[];
}

const echo = (params: Json = {}): Json => ({ create_info: { task_type: 'demo.echo' }, params });
const failing = (): Json => ({
  create_info: { task_type: 'demo.flaky' },
  params: { fail_times: 99 },
  process_arg: { max_retry: 0 },
});
const sleeping = (seconds: number): Json => ({
  create_info: { task_type: 'demo.sleep' },
  params: { seconds, tick_ms: 50 },
});

/** The most runs of these tasks under way at one instant. */
function peakConcurrency(runs: readonly RunInterval[]): number {
  const edges = runs.flatMap((r) => [
    { at: r.start, d: 1 },
    { at: r.end ?? Infinity, d: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let peak = 0;
  for (const e of edges) peak = Math.max(peak, (now += e.d));
  return peak;
}

// On the embedded defaults only: MariaDB, Redis and the other lock backends are proven by the
// store, queue and lock conformance suites and the scheduler-flows and crash e2e files.
describe.each([['sqlite + memory + local locks', async () => embeddedBackend()]])(
  'topologies on %s',
  (_name, makeBackend: () => Promise<Backend>) => {
    let backend: Backend;
    let dir: string;
    let runLog: string;
    let scheduler: RunningProcess;
    let worker: RunningProcess;
    let api: Api;

    beforeAll(async () => {
      backend = await makeBackend();
      dir = mkdtempSync(join(tmpdir(), 'baton-topologies-'));
      runLog = join(dir, 'runs.jsonl');
      scheduler = await startScheduler(backend, { BATON_INSTANCE_ID: 'topologies-1' });
      worker = await startTemplateWorker('topologies-w1', scheduler.url, runLog, {
        WORKER_CAPACITY: '200',
        WORKER_ROLLBACK_DIR: join(dir, 'rollback'),
      });
      api = new Api(scheduler.url);
      await api.waitForWorkers(1);
    });

    afterAll(async () => {
      await worker?.stop();
      await scheduler?.stop();
      await backend?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    const define = async (def: Json): Promise<void> => {
      const r = await api.call('POST', '/v1/topologies', def);
      if (r.status !== 201 && r.status !== 200) throw new Error(`define: ${r.status} ${r.message}`);
    };
    const start = async (name: string, input: Json = {}): Promise<string> => {
      const r = await api.call<Run>('POST', `/v1/topologies/${name}/runs`, { input });
      if (r.status !== 201) throw new Error(`start: ${r.status} ${r.message}`);
      return r.data.run_id;
    };
    const run = async (id: string): Promise<Run> =>
      (await api.call<Run>('GET', `/v1/topology-runs/${id}`)).data;
    const finished = (id: string, timeoutMs = 60_000): Promise<Run> =>
      eventually(
        async () => {
          const r = await run(id);
          return r.status === 'FINISH' ? r : undefined;
        },
        timeoutMs,
        `topology run ${id} finishing`,
      );
    const node = (r: Run, key: string): RunNode => {
      const n = r.nodes.find((x) => x.key === key);
      if (!n) throw new Error(`run ${r.run_id} has no node ${key}`);
      return n;
    };
    const runsOf = (taskIds: readonly (string | null)[]): RunInterval[] => {
      const ids = new Set(taskIds);
      return readRunLogs([runLog]).filter((r) => ids.has(r.task_id));
    };

    it('runs a diamond, passing data from A to D, each node a task under the centre task', async () => {
      await define({
        name: 'diamond',
        nodes: [
          { key: 'A', task: echo({ primary: '{{input.cluster}}-db1', replicas: 2 }) },
          { key: 'B', depends_on: ['A'], task: echo({ n: '{{nodes.A.result.echo.replicas}}' }) },
          { key: 'C', depends_on: ['A'], task: echo({ side: 'c' }) },
          {
            key: 'D',
            depends_on: ['B', 'C'],
            task: echo({ primary: '{{nodes.A.result.echo.primary}}', b: '{{nodes.B.status}}' }),
          },
        ],
      });
      const id = await start('diamond', { cluster: 'orders' });
      const r = await finished(id);
      expect(r.outcome).toBe('SUCCESS');
      expect(r.nodes.map((n) => n.status)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']);
      expect(node(r, 'D').result).toEqual({ echo: { primary: 'orders-db1', b: 'SUCCESS' } });
      expect(node(r, 'B').result).toEqual({ echo: { n: 2 } });
      for (const n of r.nodes) {
        const t = await api.task(n.task_id as string);
        expect(t.parent_task_id).toBe(id);
        expect(t.control_task_id).toBe(id);
      }
      const centre = await api.task(id);
      expect(centre.repetition).toBe('topology');
      // No node started before all of its parents ended (from the worker's own run log).
      const [a, b, c, d] = ['A', 'B', 'C', 'D'].map((k) => runsOf([node(r, k).task_id])[0]);
      expect(b.start).toBeGreaterThanOrEqual(a.end as number);
      expect(c.start).toBeGreaterThanOrEqual(a.end as number);
      expect(d.start).toBeGreaterThanOrEqual(Math.max(b.end as number, c.end as number));
    });

    it('applies each trigger rule, a node a failure keeps from running UPSTREAM_FAILED, one whose rule can never be met otherwise SKIPPED', async () => {
      await define({
        name: 'rules',
        nodes: [
          { key: 'ok', task: echo() },
          { key: 'bad', task: failing() },
          { key: 'all_success', depends_on: ['ok', 'bad'], task: echo() },
          { key: 'all_done', depends_on: ['ok', 'bad'], trigger_rule: 'all_done', task: echo() },
          {
            key: 'one_success',
            depends_on: ['ok', 'bad'],
            trigger_rule: 'one_success',
            task: echo(),
          },
          {
            key: 'one_failed',
            depends_on: ['ok', 'bad'],
            trigger_rule: 'one_failed',
            task: echo(),
          },
          { key: 'none_failed', depends_on: ['ok'], trigger_rule: 'one_failed', task: echo() },
        ],
      });
      const r = await finished(await start('rules'));
      const statuses = Object.fromEntries(r.nodes.map((n) => [n.key, n.status]));
      expect(statuses).toEqual({
        ok: 'SUCCESS',
        bad: 'FAILED',
        all_success: 'UPSTREAM_FAILED',
        all_done: 'SUCCESS',
        one_success: 'SUCCESS',
        one_failed: 'SUCCESS',
        none_failed: 'SKIPPED',
      });
      expect(node(r, 'all_success').task_id).toBeNull();
      // Nodes ran because of the failure; it still fails the run (docs/topologies.md).
      expect(r.outcome).toBe('FAIL');
      expect(r.failed_nodes).toEqual(['bad', 'all_success']);
    });

    it('takes each branch of a switch, skipping the others', async () => {
      await define({
        name: 'switch',
        nodes: [
          { key: 'check', task: echo({ mode: '{{input.mode}}' }) },
          {
            key: 'route',
            depends_on: ['check'],
            switch: {
              value: '{{nodes.check.result.echo.mode}}',
              cases: { fast: ['fast'], slow: ['slow'] },
              default: ['other'],
            },
          },
          { key: 'fast', depends_on: ['route'], task: echo() },
          { key: 'slow', depends_on: ['route'], task: echo() },
          { key: 'other', depends_on: ['route'], task: echo() },
          {
            key: 'after',
            depends_on: ['fast', 'slow', 'other'],
            trigger_rule: 'one_success',
            task: echo(),
          },
        ],
      });
      for (const [mode, taken] of [
        ['fast', 'fast'],
        ['slow', 'slow'],
        ['sideways', 'other'],
      ]) {
        const r = await finished(await start('switch', { mode }));
        expect(r.outcome).toBe('SUCCESS');
        for (const k of ['fast', 'slow', 'other'])
          expect([k, node(r, k).status]).toEqual([k, k === taken ? 'SUCCESS' : 'SKIPPED']);
        expect(node(r, 'route').result).toEqual({
          value: mode,
          case: taken === 'other' ? 'default' : mode,
        });
        expect(node(r, 'after').status).toBe('SUCCESS');
      }
    });

    it('forks 200 children from a list with at most 20 running, joined by one node', async () => {
      const hosts = Array.from({ length: 200 }, (_, i) => `h${i}`);
      await define({
        name: 'fanout',
        nodes: [
          { key: 'list', task: echo({ hosts: '{{input.hosts}}' }) },
          {
            key: 'each',
            depends_on: ['list'],
            for_each: '{{nodes.list.result.echo.hosts}}',
            concurrency: 20,
            task: {
              create_info: { task_type: 'demo.sleep', task_name: 'sleep {{item}}' },
              params: { seconds: 0.1, tick_ms: 50, host: '{{item}}', index: '{{index}}' },
            },
          },
          { key: 'join', depends_on: ['each'], task: echo({ n: '{{nodes.each.result.count}}' }) },
        ],
      });
      const id = await start('fanout', { hosts });
      const r = await finished(id, 180_000);
      expect(r.outcome).toBe('SUCCESS');
      expect(node(r, 'each').items).toEqual({ total: 200, SUCCESS: 200 });
      expect(node(r, 'join').result).toEqual({ echo: { n: 200 } });
      const children = (
        await api.call<{ items: { task_id: string; params: Json }[] }>(
          'GET',
          `/v1/tasks?task_type=demo.sleep&limit=500`,
        )
      ).data.items.filter((t) => String(t.params.host).startsWith('h'));
      const ids = new Set(children.map((t) => t.task_id));
      const runs = runsOf([...ids]);
      expect(new Set(runs.map((x) => x.task_id)).size).toBe(200);
      const peak = peakConcurrency(runs);
      expect(peak).toBeLessThanOrEqual(20);
      expect(peak).toBeGreaterThan(5);
      const join = runsOf([node(r, 'join').task_id])[0];
      expect(join.start).toBeGreaterThanOrEqual(Math.max(...runs.map((x) => x.end as number)));
    });

    it('runs a sub-topology as a child run, and an on-failure handler when the run fails', async () => {
      await define({ name: 'child', nodes: [{ key: 'x', task: echo({ x: '{{input.x}}' }) }] });
      await define({
        name: 'parent',
        nodes: [
          { key: 'sub', topology: { name: 'child', input: { x: '{{input.x}}' } } },
          { key: 'then', depends_on: ['sub'], task: failing() },
          { key: 'cleanup', on_failure: true, task: echo({ failed: true }) },
        ],
      });
      const id = await start('parent', { x: 7 });
      const r = await finished(id);
      expect(node(r, 'sub').status).toBe('SUCCESS');
      const child = await run(node(r, 'sub').task_id as string);
      expect(child.parent_run_id).toBe(id);
      expect(child.outcome).toBe('SUCCESS');
      expect(node(child, 'x').result).toEqual({ echo: { x: 7 } });
      expect(node(r, 'then').status).toBe('FAILED');
      expect(node(r, 'cleanup').status).toBe('SUCCESS');
      expect(r.outcome).toBe('FAIL');
      expect(r.error).toContain('node then failed');
    });

    it('waits for a signal, whose data the next node reads', async () => {
      await define({
        name: 'approval',
        nodes: [
          { key: 'approve', wait: { signal: 'approved' } },
          {
            key: 'go',
            depends_on: ['approve'],
            task: echo({ by: '{{nodes.approve.result.data.by}}' }),
          },
        ],
      });
      const id = await start('approval');
      await eventually(
        async () => ((await run(id)).nodes[0].status === 'ACTIVE' ? true : undefined),
        20_000,
        'the wait node waiting',
      );
      const early = await api.call('POST', `/v1/topology-runs/${id}/signal`, { signal: 'other' });
      expect(early.status).toBe(409);
      const sent = await api.call('POST', `/v1/topology-runs/${id}/signal`, {
        signal: 'approved',
        data: { by: 'alice' },
      });
      expect(sent.status).toBe(200);
      const r = await finished(id);
      expect(node(r, 'go').result).toEqual({ echo: { by: 'alice' } });
    });

    it('cancels a running run: the running node is cancelled and the run ends CANCELLED', async () => {
      await define({
        name: 'long',
        nodes: [
          { key: 'slow', task: sleeping(60) },
          { key: 'next', depends_on: ['slow'], task: echo() },
        ],
      });
      const id = await start('long');
      await eventually(
        async () => ((await run(id)).nodes[0].task_id ? true : undefined),
        20_000,
        'the first node starting',
      );
      const c = await api.call<Run>('POST', `/v1/topology-runs/${id}/cancel`);
      expect(c.status).toBe(200);
      const r = await finished(id);
      expect(r.outcome).toBe('CANCELLED');
      expect(r.error).toBe('cancelled');
      const byOutcome = async (outcome: string): Promise<string[]> =>
        (
          await api.call<{ items: Run[] }>('GET', `/v1/topology-runs?name=long&outcome=${outcome}`)
        ).data.items.map((x) => x.run_id);
      expect(await byOutcome('CANCELLED')).toEqual([id]);
      expect(await byOutcome('FAIL')).toEqual([]);
      expect(node(r, 'slow').status).toBe('CANCELLED');
      expect(node(r, 'next').status).toBe('CANCELLED');
      const t = await api.task(node(r, 'slow').task_id as string);
      expect([t.cancel_requested, t.error]).toEqual([true, expect.anything()]);
      expect((await api.call('POST', `/v1/topology-runs/${id}/cancel`)).status).toBe(409);
    });

    it('cancels a running sub-topology with its parent run', async () => {
      await define({ name: 'slow-child', nodes: [{ key: 'wait', task: sleeping(60) }] });
      await define({
        name: 'slow-parent',
        nodes: [{ key: 'sub', topology: { name: 'slow-child', input: {} } }],
      });
      const id = await start('slow-parent');
      const childId = await eventually(
        async () => {
          const sub = node(await run(id), 'sub').task_id;
          return sub && node(await run(sub), 'wait').task_id ? sub : undefined;
        },
        20_000,
        "the child run's node starting",
      );
      expect((await api.call('POST', `/v1/topology-runs/${id}/cancel`)).status).toBe(200);
      const parent = await finished(id);
      const child = await finished(childId);
      expect([parent.outcome, child.outcome]).toEqual(['CANCELLED', 'CANCELLED']);
      const t = await api.task(node(child, 'wait').task_id as string);
      expect(t).toMatchObject({ cancel_requested: true, outcome: 'CANCELLED' });
    });

    it('retries a failed run from its failed node: the nodes before it do not run again', async () => {
      await define({
        name: 'retry',
        nodes: [
          { key: 'A', task: echo({ a: 1 }) },
          { key: 'B', depends_on: ['A'], task: { ...failing(), params: { fail_times: 1 } } },
          { key: 'C', depends_on: ['B'], task: echo({ from: '{{nodes.A.result.echo.a}}' }) },
        ],
      });
      const id = await start('retry');
      const failed = await finished(id);
      expect(failed.outcome).toBe('FAIL');
      expect(failed.nodes.map((n) => n.status)).toEqual(['SUCCESS', 'FAILED', 'UPSTREAM_FAILED']);
      const r = await api.call<Run>('POST', `/v1/topology-runs/${id}/retry`);
      expect(r.status).toBe(200);
      const ok = await eventually(
        async () => {
          const x = await run(id);
          return x.status === 'FINISH' && x.outcome === 'SUCCESS' ? x : undefined;
        },
        60_000,
        'the retried run succeeding',
      );
      expect(ok.nodes.map((n) => n.status)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);
      // The same run and graph: A ran once, B twice (the same task, attempt 2), C once.
      expect(node(ok, 'B').task_id).toBe(node(failed, 'B').task_id);
      expect(runsOf([node(ok, 'A').task_id]).length).toBe(1);
      expect(runsOf([node(ok, 'B').task_id]).map((x) => x.attempt)).toEqual([1, 2]);
      expect(runsOf([node(ok, 'C').task_id]).length).toBe(1);
      expect(node(ok, 'C').result).toEqual({ echo: { from: 1 } });
      expect((await api.call('POST', `/v1/topology-runs/${id}/retry`)).status).toBe(409);
    });

    it('re-runs one node and what follows it, and skips a failed node so the run goes on', async () => {
      await define({
        name: 'repairs',
        nodes: [
          { key: 'A', task: echo() },
          { key: 'B', depends_on: ['A'], task: echo() },
          { key: 'C', depends_on: ['A'], task: failing() },
          { key: 'D', depends_on: ['B'], task: echo() },
          { key: 'E', depends_on: ['C'], task: echo() },
        ],
      });
      const id = await start('repairs');
      const first = await finished(id);
      expect(first.outcome).toBe('FAIL');
      // Skip C: E goes on as if it had succeeded, once the run is retried.
      expect((await api.call('POST', `/v1/topology-runs/${id}/nodes/C/skip`)).status).toBe(200);
      expect((await api.call('POST', `/v1/topology-runs/${id}/nodes/A/skip`)).status).toBe(409);
      expect((await api.call('POST', `/v1/topology-runs/${id}/retry`)).status).toBe(200);
      const second = await eventually(
        async () => {
          const x = await run(id);
          return x.status === 'FINISH' && x.outcome === 'SUCCESS' ? x : undefined;
        },
        60_000,
        'the run succeeding past the skipped node',
      );
      expect([node(second, 'C').status, node(second, 'E').status]).toEqual(['SKIPPED', 'SUCCESS']);
      // Re-run B and what follows it (D): A and the rest do not run again.
      expect((await api.call('POST', `/v1/topology-runs/${id}/nodes/B/rerun`)).status).toBe(200);
      const third = await eventually(
        async () => {
          const x = await run(id);
          const d = runsOf([node(x, 'D').task_id]);
          return x.status === 'FINISH' && d.length === 2 ? x : undefined;
        },
        60_000,
        'B and D running again',
      );
      expect(third.outcome).toBe('SUCCESS');
      expect(runsOf([node(third, 'A').task_id]).length).toBe(1);
      expect(runsOf([node(third, 'B').task_id]).map((x) => x.attempt)).toEqual([1, 2]);
      expect(runsOf([node(third, 'E').task_id]).length).toBe(1);
    });

    it('skips a failed node of a running run: the node after it runs, and the run succeeds', async () => {
      await define({
        name: 'skip-live',
        nodes: [
          { key: 'A', task: echo() },
          { key: 'C', depends_on: ['A'], task: failing() },
          { key: 'E', depends_on: ['C'], task: echo() },
          // Keeps the run going until the test lets it end.
          { key: 'hold', depends_on: ['A'], wait: { signal: 'go' } },
        ],
      });
      const id = await start('skip-live');
      await eventually(
        async () => {
          const r = await run(id);
          return node(r, 'C').status === 'FAILED' && node(r, 'E').status === 'UPSTREAM_FAILED'
            ? true
            : undefined;
        },
        30_000,
        'C failing and E not run because of it',
      );
      expect((await api.call('POST', `/v1/topology-runs/${id}/nodes/C/skip`)).status).toBe(200);
      const e = await eventually(
        async () => {
          const n = node(await run(id), 'E');
          return n.status === 'SUCCESS' ? n : undefined;
        },
        30_000,
        'E running after C was skipped',
      );
      expect(e.task_id).not.toBeNull();
      expect(
        (await api.call('POST', `/v1/topology-runs/${id}/signal`, { signal: 'go' })).status,
      ).toBe(200);
      const r = await finished(id);
      expect(r.outcome).toBe('SUCCESS');
      expect(node(r, 'C').status).toBe('SKIPPED');
    });

    it('rolls back the succeeded nodes of a failed run in reverse order (saga)', async () => {
      const undoable = (extra: Json = {}): Json => ({
        create_info: { task_type: 'demo.rollback' },
        params: extra,
        process_arg: { max_retry: 0 },
      });
      await define({
        name: 'saga',
        rollback_on_failure: true,
        nodes: [
          { key: 'A', task: undoable() },
          { key: 'B', depends_on: ['A'], task: undoable() },
          { key: 'E', depends_on: ['A'], task: echo() },
          { key: 'C', depends_on: ['B'], task: undoable({ fail: true }) },
        ],
      });
      const id = await start('saga');
      const r = await finished(id);
      expect(r.outcome).toBe('FAIL');
      expect(Object.fromEntries(r.nodes.map((n) => [n.key, n.status]))).toEqual({
        A: 'ROLLED_BACK',
        B: 'ROLLED_BACK',
        E: 'SUCCESS',
        C: 'FAILED',
      });
      expect(r.error).toContain('node C failed');
      expect(r.error).toContain('rolled back 2 node task(s), not E (its type has no rollback)');
      // The worker's own rollback log: B (later) undone before A (earlier).
      const log = readFileSync(join(dir, 'rollback', 'rollbacks.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { task_id: string; at: number });
      const order = log
        .filter((l) => [node(r, 'A').task_id, node(r, 'B').task_id].includes(l.task_id))
        .map((l) => (l.task_id === node(r, 'A').task_id ? 'A' : 'B'));
      expect(order).toEqual(['B', 'A']);
      const events = await api.events(node(r, 'A').task_id as string);
      expect(events.map((e) => e.to).slice(-2)).toEqual(['ROLLBACK', 'FINISH']);
    });

    it.each([
      [
        'a cycle',
        [
          { key: 'a', depends_on: ['b'], task: echo() },
          { key: 'b', depends_on: ['a'], task: echo() },
        ],
        'b',
      ],
      ['an unknown key', [{ key: 'a', depends_on: ['nope'], task: echo() }], 'a'],
      [
        'an unknown task type',
        [{ key: 'a', task: { create_info: { task_type: 'no.such' } } }],
        'a',
      ],
      [
        'a placeholder of a node not upstream',
        [
          { key: 'a', task: echo() },
          { key: 'b', task: echo({ x: '{{nodes.a.result}}' }) },
        ],
        'b',
      ],
      ['a placeholder with a bad root', [{ key: 'a', task: echo({ x: '{{secrets.db}}' }) }], 'a'],
      [
        'more than 1,000 nodes',
        Array.from({ length: 1001 }, (_, i) => ({ key: `n${i}`, task: echo() })),
        'n1000',
      ],
    ])('refuses %s with a 400 naming the node, storing nothing', async (_case, nodes, at) => {
      const name = `bad-${Math.random().toString(36).slice(2, 8)}`;
      const r = await api.call<{ node: string; errors: { node: string }[] }>(
        'POST',
        '/v1/topologies',
        { name, nodes },
      );
      expect(r.status).toBe(400);
      expect(r.data.node).toBe(at);
      expect(r.data.errors.map((e) => e.node)).toEqual([at]);
      expect(r.message).toContain(`node ${at}`);
      expect((await api.call('GET', `/v1/topologies/${name}`)).status).toBe(404);
    });
  },
);
