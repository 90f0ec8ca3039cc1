import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis, { Cluster } from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { findOverlaps, readRunLogs } from '../apps/worker-template/src/run-log/run-log-analysis';
import {
  Api,
  Backend,
  productionBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually } from './support/processes';
import {
  CLUSTER_NODES,
  CLUSTER_PORTS,
  KilledNode,
  assertClusterHealthy,
  clusterNodes,
  deleteClusterKeys,
  killNode,
  masterOf,
  restartNode,
  waitForTakeover,
} from './support/redis-cluster';

// The waits of a loaded box's failover and restart add up past five minutes.
jest.setTimeout(600_000);

/** Tasks per batch: one before the kill, one while the cluster fails over. */
const BATCH = 150;

/** Statuses and outcomes of `ids`, straight from the database (the source of truth). */
async function outcomes(
  database: string,
  ids: readonly string[],
): Promise<{ status: string; outcome: string | null }[]> {
  const c = await createConnection({ host: '127.0.0.1', user: 'root', password: '', database });
  try {
    const [rows] = await c.query('SELECT status, outcome FROM baton_task WHERE task_id IN (?)', [
      ids,
    ]);
    return rows as { status: string; outcome: string | null }[];
  } finally {
    await c.end();
  }
}

/**
 * A scheduler whose every Redis client (queue, rate and fair-share counts, locks, a log stream)
 * is on the machine's Redis Cluster (BATON_REDIS_CLUSTER_NODES), on MariaDB, with a template
 * worker. The master serving the queue's first shard is killed (SIGKILL) while tasks run, its
 * replica takes over, and every task still ends exactly once: one SUCCESS run each, none lost,
 * none run twice. The killed node is then started again and rejoins as a replica, so the cluster
 * is whole for the next test (the Cluster cases of the queue and lock conformance suites run in
 * this file's lane, one file at a time).
 */
describe('Redis Cluster: a master killed under load', () => {
  let backend: Backend;
  let dir: string;
  const procs: RunningProcess[] = [];
  let killed: KilledNode | undefined;

  beforeAll(async () => {
    // Fails (never skips) when the cluster is down or broken, saying how to bring it up.
    await assertClusterHealthy();
    dir = mkdtempSync(join(tmpdir(), 'baton-redis-cluster-'));
    backend = await productionBackend();
    Object.assign(backend.env, {
      BATON_REDIS_CLUSTER_NODES: CLUSTER_NODES,
      // A tenant limit far above what runs here: every start takes a slot in the rate store.
      BATON_TENANT_RATE_LIMIT: '100000',
      // A log stream read in a consumer group: the LogDumper's client is on the Cluster too.
      BATON_LOG_STREAMS: `events=${streamKey(backend)}`,
    });
  });

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    try {
      // A failed test may have left the node down: the next test needs the cluster whole.
      if (killed) await restartNode(killed);
    } finally {
      if (backend) await deleteClusterKeys(`*e2e:${prefixId(backend)}:*`);
      await backend?.cleanup();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('loses no task and runs none twice while a master fails over to its replica', async () => {
    const scheduler = await startScheduler(backend, { BATON_INSTANCE_ID: 'cluster-1' });
    procs.push(scheduler);
    const runLog = join(dir, 'cluster-w1.jsonl');
    const worker = await startTemplateWorker('cluster-w1', scheduler.url, runLog, {
      WORKER_CAPACITY: '256',
    });
    procs.push(worker);
    const api = new Api(scheduler.url);
    await api.waitForWorkers(1);

    // Short async sleeps in two tenants (so the fair share counts them), and quick echoes.
    const batch = async (round: number): Promise<string[]> => {
      const res = await api.call<{ task_id: string }[]>('POST', '/v1/tasks/batch', {
        tasks: Array.from({ length: BATCH }, (_, i) => ({
          tenant: i % 2 ? 'team-a' : 'team-b',
          ...(i % 3 === 0
            ? {
                create_info: { task_type: 'demo.echo', task_name: `cluster ${round}.${i}` },
                params: { i },
              }
            : {
                create_info: { task_type: 'demo.sleep', task_name: `cluster ${round}.${i}` },
                params: { seconds: 0.5, tick_ms: 100 },
              }),
        })),
      });
      expect(res.status).toBe(201);
      return res.data.map((t) => t.task_id);
    };
    const database = backend.env.BATON_MYSQL_DATABASE as string;
    const ids = await batch(1);
    await eventually(
      async () => {
        const rows = await outcomes(database, ids);
        return rows.some((r) => r.status === 'RUNNING') && rows.some((r) => r.status === 'FINISH')
          ? true
          : undefined;
      },
      60_000,
      'tasks running and finishing',
    );

    // The master of the main lane's first shard (its keys share one hash tag, one slot).
    const victim = await masterOf(`{${backend.env.BATON_QUEUE_PREFIX}:s0}:p0`);
    killed = await killNode(victim);
    // Created while the cluster has no master for those slots: the database takes them.
    ids.push(...(await batch(2)));
    await waitForTakeover(killed, victim.slots);

    const rows = await eventually(
      async () => {
        const r = await outcomes(database, ids);
        return r.length === ids.length && r.every((t) => t.status === 'FINISH') ? r : undefined;
      },
      180_000,
      `all ${ids.length} tasks finishing`,
    ).catch(async (err: unknown) => {
      const r = await outcomes(database, ids);
      const by: Record<string, number> = {};
      for (const t of r) by[t.status] = (by[t.status] ?? 0) + 1;
      throw new Error(
        `${String(err)}; by status ${JSON.stringify(by)}\nscheduler: ${scheduler.output().slice(-3000)}`,
      );
    });
    expect(rows.filter((t) => t.outcome !== 'SUCCESS')).toEqual([]);

    // What the worker ran: one run per task, that run a SUCCESS, none overlapping another.
    const idSet = new Set(ids);
    const runs = readRunLogs([runLog].filter(existsSync)).filter((r) => idSet.has(r.task_id));
    const runsOf = new Map<string, number>();
    for (const r of runs) runsOf.set(r.task_id, (runsOf.get(r.task_id) ?? 0) + 1);
    expect([...runsOf].filter(([, n]) => n !== 1)).toEqual([]);
    expect(runsOf.size).toBe(ids.length);
    expect(runs.filter((r) => r.outcome !== 'SUCCESS')).toEqual([]);
    expect(findOverlaps(runs)).toEqual([]);

    // Every client went to the Cluster: nothing of this run's is on the standalone server (which
    // the clients would have used had one of them not been made a Cluster client).
    const standalone = new Redis({ host: '127.0.0.1', port: 6379, maxRetriesPerRequest: 1 });
    // Every node to start from: the killed one may be the first.
    const cluster = new Cluster(CLUSTER_PORTS.map((port) => ({ host: '127.0.0.1', port })));
    try {
      expect(await standalone.keys(`*e2e:${prefixId(backend)}:*`)).toEqual([]);
      const groups = (await cluster.xinfo('GROUPS', streamKey(backend))) as unknown[][];
      expect(groups.map((g) => g[g.indexOf('name') + 1])).toEqual(['baton-logdumper']);
    } finally {
      standalone.disconnect();
      cluster.disconnect();
    }

    // The killed node comes back as a replica of the master that took its slots.
    const dead = killed;
    await restartNode(dead);
    killed = undefined;
    const back = (await clusterNodes(dead.port)).find((n) => n.id === dead.id);
    expect(back?.master).toBe(false);
    console.log(
      `Redis Cluster: master ${dead.port} killed under load and failed over; ${ids.length} tasks, ` +
        `${runs.length} runs, each SUCCESS once; the node rejoined as a replica`,
    );
  });
});

/** The id in this backend's key prefixes (`e2e:<id>:q`, `e2e:<id>:lock:`). */
function prefixId(backend: Backend): string {
  return String(backend.env.BATON_QUEUE_PREFIX).split(':')[1];
}

/** The log stream the scheduler reads, under this backend's prefix (deleted with its keys). */
function streamKey(backend: Backend): string {
  return `e2e:${prefixId(backend)}:logs`;
}
