import { execFileSync } from 'node:child_process';
import Redis from 'ioredis';
import { eventually } from './processes';

/**
 * The machine's Redis Cluster (scripts/services.sh): 3 masters and 3 replicas on 127.0.0.1:7000-7005,
 * each node with its redis.conf in a directory of its own. What a failover test reads of it and
 * does to it: which master serves a key, killing that master, waiting for its replica to take
 * over, and starting the killed node again so that it rejoins as a replica.
 */

export const CLUSTER_PORTS = [7000, 7001, 7002, 7003, 7004, 7005];
/** BATON_REDIS_CLUSTER_NODES for a scheduler on it: every node, as one may be down. */
export const CLUSTER_NODES = CLUSTER_PORTS.map((port) => `127.0.0.1:${port}`).join(',');
const WHERE = `the Redis Cluster at 127.0.0.1:${CLUSTER_PORTS[0]}-${CLUSTER_PORTS.at(-1)}`;

/** One line of CLUSTER NODES. */
export interface ClusterNode {
  id: string;
  port: number;
  master: boolean;
  /** The node's master, for a replica. */
  masterId: string | null;
  /** Marked failed (or possibly failed) by the node that answered. */
  failing: boolean;
  connected: boolean;
  /** Slot ranges served, inclusive, for a master. */
  slots: [number, number][];
}

/** One command on one node, over a connection of its own (a node may be down: it fails fast). */
export async function onNode(port: number, ...args: string[]): Promise<unknown> {
  const redis = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 2000,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await redis.call(args[0], ...args.slice(1));
  } finally {
    redis.disconnect();
  }
}

/** The cluster as `port` sees it. */
export async function clusterNodes(port: number): Promise<ClusterNode[]> {
  const text = String(await onNode(port, 'CLUSTER', 'NODES'));
  return text
    .trim()
    .split('\n')
    .map((line) => {
      // id, address@bus-port, flags, master id, ping sent, pong received, epoch, link, slots...
      const f = line.trim().split(' ');
      const flags = f[2].split(',');
      return {
        id: f[0],
        port: Number(f[1].split('@')[0].split(':').at(-1)),
        master: flags.includes('master'),
        masterId: f[3] === '-' ? null : f[3],
        failing: flags.includes('fail') || flags.includes('fail?'),
        connected: f[7] === 'connected',
        slots: f
          .slice(8)
          .filter((s) => !s.startsWith('['))
          .map((s) => {
            const [from, to] = s.split('-').map(Number);
            return [from, to ?? from] as [number, number];
          }),
      };
    });
}

/** An INFO field of a node (`role`, `master_link_status`, `process_id`...). */
async function infoField(port: number, section: string, field: string): Promise<string> {
  const text = String(await onNode(port, 'INFO', section));
  const line = text.split(/\r?\n/).find((l) => l.startsWith(`${field}:`));
  return line?.slice(field.length + 1) ?? '';
}

/**
 * Why the cluster is not as scripts/services.sh leaves it (every node up and saying
 * cluster_state:ok, three masters serving the slots, each with a replica whose link is up), or
 * undefined when it is.
 */
export async function clusterProblem(): Promise<string | undefined> {
  try {
    for (const port of CLUSTER_PORTS) {
      const state = String(await onNode(port, 'CLUSTER', 'INFO')).match(/cluster_state:(\w+)/);
      if (state?.[1] !== 'ok') return `node ${port} says cluster_state:${state?.[1]}`;
      if ((await infoField(port, 'replication', 'role')) === 'slave') {
        const link = await infoField(port, 'replication', 'master_link_status');
        if (link !== 'up') return `node ${port}'s link to its master is ${link}`;
      }
    }
    const nodes = await clusterNodes(CLUSTER_PORTS[0]);
    const masters = nodes.filter((n) => n.master && !n.failing && n.slots.length > 0);
    const replicas = nodes.filter((n) => !n.master && !n.failing && n.connected);
    if (masters.length !== 3 || replicas.length !== 3)
      return `${masters.length} masters with slots and ${replicas.length} replicas, not 3 and 3`;
    return undefined;
  } catch (error) {
    return `a node does not answer (${(error as Error).message})`;
  }
}

/** Fails, saying how to bring it up, unless the cluster is whole and healthy. */
export async function assertClusterHealthy(): Promise<void> {
  const problem = await clusterProblem();
  if (problem)
    throw new Error(
      `${WHERE} is not reachable or not healthy (${problem}): run \`bash scripts/services.sh\``,
    );
}

/** The first node that answers (a test may have killed one). */
async function liveNode(): Promise<number> {
  for (const port of CLUSTER_PORTS) {
    if (
      await onNode(port, 'PING').then(
        () => true,
        () => false,
      )
    )
      return port;
  }
  throw new Error(`no node of ${WHERE} answers: run \`bash scripts/services.sh\``);
}

/** The master serving `key`'s slot. */
export async function masterOf(key: string): Promise<ClusterNode> {
  const port = await liveNode();
  const slot = Number(await onNode(port, 'CLUSTER', 'KEYSLOT', key));
  const master = (await clusterNodes(port)).find(
    (n) => n.master && !n.failing && n.slots.some(([from, to]) => slot >= from && slot <= to),
  );
  if (!master) throw new Error(`no master serves slot ${slot} (${key})`);
  return master;
}

/** A node killed by `killNode`, and how to bring it back. */
export interface KilledNode {
  port: number;
  id: string;
  /** Its config file, as the node said before it died. */
  configFile: string;
}

/**
 * SIGKILLs the node on `port`: no goodbye to the cluster, as a crash. Its pid and config file are
 * read from the node first, so `restartNode` can start it as it was.
 */
export async function killNode(node: ClusterNode): Promise<KilledNode> {
  const pid = Number(await infoField(node.port, 'server', 'process_id'));
  const configFile = await infoField(node.port, 'server', 'config_file');
  if (!pid || !configFile)
    throw new Error(
      `node ${node.port} did not say its pid and config file (${pid}, ${configFile})`,
    );
  process.kill(pid, 'SIGKILL');
  await eventually(
    async () =>
      (await onNode(node.port, 'PING').then(
        () => false,
        () => true,
      )) || undefined,
    10_000,
    `node ${node.port} gone`,
  );
  return { port: node.port, id: node.id, configFile };
}

/**
 * Until the cluster has failed `dead` over: a live node says cluster_state:ok and another master
 * serves every slot `dead` served (its replica, promoted).
 */
export async function waitForTakeover(dead: KilledNode, slots: [number, number][]): Promise<void> {
  const live = CLUSTER_PORTS.find((p) => p !== dead.port)!;
  await eventually(
    async () => {
      if (!/cluster_state:ok/.test(String(await onNode(live, 'CLUSTER', 'INFO')))) return undefined;
      const nodes = await clusterNodes(live);
      const served = ([from]: [number, number]): boolean =>
        nodes.some(
          (n) =>
            n.id !== dead.id &&
            n.master &&
            !n.failing &&
            n.slots.some(([a, b]) => from >= a && from <= b),
        );
      return slots.every(served) ? true : undefined;
    },
    60_000,
    `a replica taking over from the killed master ${dead.port}`,
  );
}

/**
 * Starts a killed node again from its own config file. Its nodes.conf remembers the cluster; the
 * cluster moved on without it, so it rejoins as a replica of the master that took its slots, and
 * syncs from it. Resolves once the whole cluster is healthy again (three masters, three linked
 * replicas), so the next test finds it as scripts/services.sh leaves it.
 */
export async function restartNode(dead: KilledNode): Promise<void> {
  execFileSync('redis-server', [dead.configFile]);
  await eventually(
    async () => ((await clusterProblem()) === undefined ? true : undefined),
    90_000,
    `${WHERE} healthy again after node ${dead.port} was started again`,
  ).catch(async (error: unknown) => {
    throw new Error(
      `${String(error)}; now: ${(await clusterProblem()) ?? 'healthy'}. ` +
        `Bring it back with \`bash scripts/services.sh\``,
    );
  });
}

/**
 * Deletes the keys matching `pattern` on every master (a test's own prefix): one by one, as they
 * live in many slots.
 */
export async function deleteClusterKeys(pattern: string): Promise<number> {
  let deleted = 0;
  for (const node of await clusterNodes(await liveNode())) {
    if (!node.master || node.failing) continue;
    const redis = new Redis({ host: '127.0.0.1', port: node.port, maxRetriesPerRequest: 1 });
    try {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        for (const key of keys) deleted += await redis.unlink(key);
        cursor = next;
      } while (cursor !== '0');
    } finally {
      redis.disconnect();
    }
  }
  return deleted;
}
