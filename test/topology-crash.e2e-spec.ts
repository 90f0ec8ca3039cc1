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

  it('ends every run, creates each node once, runs none twice at once, never before its parents', async () => {
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

    const runIds: string[] = [];
    for (let r = 0; r < RUNS; r++) {
      const key = `layers-${r}`;
      // Through any instance that answers; the key makes a start sent twice one run.
      const id = await eventually(
        async () => {
          const via = new Api(urls[r % 3]);
          const res = await via
            .call<{ run_id: string }>(
              'POST',
              '/v1/topologies/layers/runs',
              { input: { r } },
              {
                'idempotency-key': key,
              },
            )
            .catch(() => undefined);
          return res && res.status < 300 ? res.data.run_id : undefined;
        },
        60_000,
        `run ${r} started`,
      );
      runIds.push(id);
      await scenario.after(200);
    }
    expect(new Set(runIds).size).toBe(RUNS);

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
    stop = true;
    await killer;
    expect(kills).toBeGreaterThanOrEqual(2);
    expect(finals.map((r) => r.outcome)).toEqual(runIds.map(() => 'SUCCESS'));

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
      expect(rows.length).toBe(RUNS * 20);
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
      `topology crash: ${RUNS} runs × 20 nodes, ${kills} scheduler kills, ${runs.length} node runs logged`,
    );
  });
});
