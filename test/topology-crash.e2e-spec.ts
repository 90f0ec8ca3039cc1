import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { createConnection } from 'mysql2/promise';
import {
  RunInterval,
  findOverlaps,
  readRunLogs,
} from '../apps/worker-template/src/run-log/run-log-analysis';
import { Api, Backend, productionBackend, startFleet, startTemplateWorker } from './support/baton';
import { RunningProcess, eventually, schedule } from './support/processes';

jest.setTimeout(420_000);

const REDIS_DB = 7;
const RUNS = 50;
/** Runs of the definition whose outcome is a failure told truly (below), started among them. */
const OUTCOME_RUNS = 10;

/**
 * A run that fails on purpose, through every kind of end: a node that succeeds, an approval (a
 * person approves it while schedulers die), a node that fails, one not run because of it, a
 * failure handler and a finally-node that reads the outcome.
 */
const OUTCOMES = [
  { key: 'ok', task: { create_info: { task_type: 'demo.echo' }, params: {} } },
  {
    key: 'gate',
    depends_on: ['ok'],
    approval: { timeout_seconds: 3600, on_timeout: 'reject', message: 'go on with {{run.id}}?' },
  },
  {
    key: 'bad',
    depends_on: ['gate'],
    task: {
      create_info: { task_type: 'demo.flaky' },
      params: { fail_times: 99 },
      process_arg: { max_retry: 0 },
    },
  },
  { key: 'next', depends_on: ['bad'], task: { create_info: { task_type: 'demo.echo' } } },
  { key: 'page', on_failure: true, task: { create_info: { task_type: 'demo.echo' } } },
  {
    key: 'report',
    finally: true,
    task: { create_info: { task_type: 'demo.echo' }, params: { outcome: '{{run.outcome}}' } },
  },
];
/** The node tasks an OUTCOMES run makes: `next` is never run, `gate` has no task. */
const OUTCOME_TASKS = 4;

/** Fails loudly (never skips) when etcd, the lock server of this test, is down. */
function etcdServes(): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: 2379, timeout: 3000 });
    const fail = (why: string): void => {
      socket.destroy();
      reject(
        new Error(
          `etcd at 127.0.0.1:2379 is not reachable (${why}); start it with \`bash scripts/services.sh\``,
        ),
      );
    };
    socket.once('connect', () => {
      socket.end();
      resolve();
    });
    socket.once('timeout', () => fail('timeout'));
    socket.once('error', (err) => fail(err.message));
  });
}

/**
 * Twenty nodes in five layers: a root, five nodes after it, layers that each depend on two nodes
 * of the one before, and a join of the last layer. Some nodes sleep a little (async), the rest
 * echo (sync), so node ends and scheduler deaths interleave.
 */
function layeredDag(): Record<string, unknown>[] {
  const task = (i: number) =>
    i % 3 === 0
      ? { create_info: { task_type: 'demo.sleep' }, params: { seconds: 0.2, tick_ms: 50 } }
      : { create_info: { task_type: 'demo.echo' }, params: { i } };
  const nodes: Record<string, unknown>[] = [{ key: 'root', task: task(0) }];
  const layers = [5, 5, 4, 4];
  let previous = ['root'];
  let n = 1;
  for (const width of layers) {
    const keys: string[] = [];
    for (let j = 0; j < width; j++) {
      const key = `n${n}`;
      const deps = [previous[j % previous.length], previous[(j + 1) % previous.length]];
      nodes.push({ key, depends_on: [...new Set(deps)], task: task(n++) });
      keys.push(key);
    }
    previous = keys;
  }
  nodes.push({ key: 'join', depends_on: previous, task: task(n) });
  return nodes;
}

interface RunNode {
  key: string;
  status: string;
  task_id: string | null;
  depends_on: string[];
  result: unknown;
}

/**
 * Topology runs under scheduler kills: three schedulers on MariaDB + Redis (queue) + etcd (locks),
 * 50 runs of a 20-node DAG started through all of them while one scheduler is `kill -9`ed every
 * 4 s (back 2 s later). Every run ends, every node task is created exactly once (counted by run
 * and node in the database), no node task runs twice at once, and no node starts before all of
 * its parents ended (from the workers' own run logs).
 */
describe('topology runs under scheduler kills', () => {
  let backend: Backend;
  let dir: string;
  const procs = new Set<RunningProcess>();

  beforeAll(async () => {
    await etcdServes();
    dir = mkdtempSync(join(tmpdir(), 'baton-topology-crash-'));
    backend = await productionBackend();
    Object.assign(backend.env, {
      BATON_REDIS_DB: String(REDIS_DB),
      BATON_LOCK: 'etcd',
      BATON_ETCD: 'http://127.0.0.1:2379',
      BATON_LOCK_PREFIX: `baton-e2e/${backend.env.BATON_MYSQL_DATABASE}/`,
    });
  });

  afterAll(async () => {
    await Promise.all([...procs].map((p) => p.stop()));
    const redis = new Redis({ host: '127.0.0.1', port: 6379, db: REDIS_DB });
    await redis.flushdb();
    redis.disconnect();
    await backend?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('ends every run, creates each node once, runs none twice at once, never before its parents, and tells failures truly', async () => {
    const { schedulers, urls, start } = await startFleet(backend, 3, 'topo', procs);
    const logs = [join(dir, 'w1.jsonl'), join(dir, 'w2.jsonl')];
    for (const [i, log] of logs.entries())
      procs.add(
        await startTemplateWorker(`topo-w${i + 1}`, urls.join(','), log, {
          WORKER_CAPACITY: '256',
        }),
      );
    const api = new Api(urls[2]);
    await api.waitForWorkers(2, 30_000);
    const def = await api.call('POST', '/v1/topologies', { name: 'layers', nodes: layeredDag() });
    expect(def.status).toBe(201);
    expect(
      (await api.call('POST', '/v1/topologies', { name: 'outcomes', nodes: OUTCOMES })).status,
    ).toBe(201);

    // Kills on a clock, one instance down at a time, while the runs start and go.
    let stop = false;
    let kills = 0;
    const scenario = schedule();
    const killer = (async () => {
      for (let k = 0; !stop; k++) {
        await scenario.after(4000);
        if (stop) break;
        const i = k % 3;
        await schedulers[i].kill9();
        procs.delete(schedulers[i]);
        kills++;
        await scenario.after(2000);
        await start(i);
        await eventually(
          async () => ((await fetch(`${urls[i]}/health/ready`)).status === 200 ? true : undefined),
          60_000,
          `scheduler ${i + 1} ready again`,
        );
      }
    })();

    // Through any instance that answers; the key makes a start sent twice one run.
    const startRun = (name: string, r: number): Promise<string> =>
      eventually(
        async () => {
          const via = new Api(urls[r % 3]);
          const res = await via
            .call<{ run_id: string }>(
              'POST',
              `/v1/topologies/${name}/runs`,
              { input: { r } },
              {
                'idempotency-key': `${name}-${r}`,
              },
            )
            .catch(() => undefined);
          return res && res.status < 300 ? res.data.run_id : undefined;
        },
        60_000,
        `${name} run ${r} started`,
      );
    const runIds: string[] = [];
    const outcomeIds: string[] = [];
    for (let r = 0; r < RUNS; r++) {
      runIds.push(await startRun('layers', r));
      if (r % (RUNS / OUTCOME_RUNS) === 0) outcomeIds.push(await startRun('outcomes', r));
      await scenario.after(200);
    }
    expect(new Set(runIds).size).toBe(RUNS);
    expect(new Set(outcomeIds).size).toBe(OUTCOME_RUNS);

    // A person approves each gate while schedulers die: a decision whose answer was lost to a
    // kill is found made when asked again (409, "approved by").
    const approve = (id: string, k: number): Promise<boolean> =>
      eventually(
        async () => {
          const res = await new Api(urls[k % 3])
            .call('POST', `/v1/topology-runs/${id}/nodes/gate/approve`, { comment: 'go' })
            .catch(() => undefined);
          if (res?.status === 200) return true;
          return res?.status === 409 && /approved by/.test(res.message) ? true : undefined;
        },
        120_000,
        `the gate of run ${id} approved`,
      );
    for (const [k, id] of outcomeIds.entries()) {
      await eventually(
        async () => {
          for (const u of urls) {
            const res = await new Api(u)
              .call<{ nodes: RunNode[] }>('GET', `/v1/topology-runs/${id}`)
              .catch(() => undefined);
            if (res?.status === 200)
              return res.data.nodes.find((n) => n.key === 'gate')?.status === 'ACTIVE'
                ? true
                : undefined;
          }
          return undefined;
        },
        120_000,
        `run ${id} waiting for its approval`,
      );
      await approve(id, k);
    }

    const read = async (id: string) =>
      eventually(
        async () => {
          for (const u of urls) {
            const res = await new Api(u)
              .call<{ status: string; outcome: string; nodes: RunNode[] }>(
                'GET',
                `/v1/topology-runs/${id}`,
              )
              .catch(() => undefined);
            if (res?.status === 200) return res.data;
          }
          return undefined;
        },
        30_000,
        `run ${id} read`,
      );
    const finals = await eventually(
      async () => {
        const all = await Promise.all(runIds.map(read));
        return all.every((r) => r.status === 'FINISH') ? all : undefined;
      },
      300_000,
      `all ${RUNS} runs finished`,
    );
    const failedOnPurpose = await eventually(
      async () => {
        const all = await Promise.all(outcomeIds.map(read));
        return all.every((r) => r.status === 'FINISH') ? all : undefined;
      },
      300_000,
      `all ${OUTCOME_RUNS} outcomes runs finished`,
    );
    stop = true;
    await killer;
    expect(kills).toBeGreaterThanOrEqual(2);
    expect(finals.map((r) => r.outcome)).toEqual(runIds.map(() => 'SUCCESS'));
    // The runs that failed on purpose say so, node by node, whatever died meanwhile.
    for (const r of failedOnPurpose) {
      const states = Object.fromEntries(r.nodes.map((n) => [n.key, n.status]));
      expect({ outcome: r.outcome, states }).toEqual({
        outcome: 'FAIL',
        states: {
          ok: 'SUCCESS',
          gate: 'SUCCESS',
          bad: 'FAILED',
          next: 'UPSTREAM_FAILED',
          page: 'SUCCESS',
          report: 'SUCCESS',
        },
      });
      expect(r.nodes.find((n) => n.key === 'report')?.result).toEqual({
        echo: { outcome: 'FAIL' },
      });
      expect(r.nodes.find((n) => n.key === 'gate')?.result).toMatchObject({
        decision: 'approved',
        comment: 'go',
      });
    }

    // Each node task exactly once: by (run, node) in the database.
    const c = await createConnection({
      host: '127.0.0.1',
      user: 'root',
      password: '',
      database: backend.env.BATON_MYSQL_DATABASE as string,
    });
    try {
      const [perNode] = await c.query(
        'SELECT control_task_id, task_name, COUNT(*) AS n FROM baton_task WHERE control_task_id IS NOT NULL GROUP BY control_task_id, task_name',
      );
      const rows = perNode as { n: number }[];
      expect(rows.length).toBe(RUNS * 20 + OUTCOME_RUNS * OUTCOME_TASKS);
      expect(rows.filter((r) => Number(r.n) !== 1)).toEqual([]);
    } finally {
      await c.end();
    }

    // What the workers ran: never one node twice at once, never a node before its parents.
    const runs = readRunLogs(logs);
    expect(findOverlaps(runs)).toEqual([]);
    const byTask = new Map<string, RunInterval[]>();
    for (const r of runs) byTask.set(r.task_id, [...(byTask.get(r.task_id) ?? []), r]);
    const early: string[] = [];
    for (const run of finals) {
      const taskOf = new Map(run.nodes.map((n) => [n.key, n.task_id as string]));
      for (const n of run.nodes) {
        const mine = byTask.get(taskOf.get(n.key) as string) ?? [];
        expect({ node: n.key, ran: mine.length > 0 }).toEqual({ node: n.key, ran: true });
        const firstStart = Math.min(...mine.map((x) => x.start));
        for (const p of n.depends_on) {
          const parentRuns = byTask.get(taskOf.get(p) as string) ?? [];
          const ended = Math.max(...parentRuns.map((x) => x.end ?? Infinity));
          if (firstStart < ended) early.push(`${n.key} started before ${p} ended`);
        }
      }
    }
    expect(early).toEqual([]);
    console.log(
      `topology crash: ${RUNS} runs × 20 nodes and ${OUTCOME_RUNS} failing on purpose (approved under kills), ${kills} scheduler kills, ${runs.length} node runs logged`,
    );
  });
});
