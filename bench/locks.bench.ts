/**
 * Lock driver benchmark (`npm run bench:locks`; not part of the test suite). Per driver:
 * uncontended acquire+release per second, and contended hand-off latency (release by one
 * holder -> acquire resolved for the waiter on another connection), p50/p99. Ratios are
 * against the local driver measured in the same run. Loopback servers only; bounded loops.
 */
import { machineLoad } from './bench-harness';
import { createLockProvider, LockConfig, LockDriverName, LockProvider } from '@baton/locks';

const env = process.env;
const CONFIGS: Record<LockDriverName, LockConfig> = {
  local: { driver: 'local' },
  mysql: {
    driver: 'mysql',
    mysql: {
      host: env.MYSQL_HOST ?? '127.0.0.1',
      user: env.MYSQL_USER ?? 'root',
      password: env.MYSQL_PASSWORD ?? '',
      database: env.MYSQL_DATABASE ?? 'test',
      maxPollMs: 50,
    },
  },
  redis: { driver: 'redis', redis: { nodes: [{ host: env.REDIS_HOST ?? '127.0.0.1' }] } },
  zookeeper: {
    driver: 'zookeeper',
    zookeeper: { connectionString: env.ZOOKEEPER_HOSTS ?? '127.0.0.1:2181' },
  },
  etcd: { driver: 'etcd', etcd: { hosts: [env.ETCD_HOST ?? 'http://127.0.0.1:2379'] } },
};

const UNCONTENDED_BUDGET_MS = 2000;
const UNCONTENDED_MAX_OPS = 5000;
const HANDOFFS = 40;
const RUN = `bench-${process.pid}-${Date.now().toString(36)}`;

interface Row {
  driver: LockDriverName;
  opsPerSec: number;
  p50: number;
  p99: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function uncontended(locks: LockProvider, driver: string): Promise<number> {
  const key = `${RUN}:${driver}:solo`;
  // Warm-up: connections, prepared statements, script cache.
  for (let i = 0; i < 5; i++) await (await locks.acquire(key, { ttlMs: 5000 })).release();
  const start = performance.now();
  let ops = 0;
  while (ops < UNCONTENDED_MAX_OPS && performance.now() - start < UNCONTENDED_BUDGET_MS) {
    await (await locks.acquire(key, { ttlMs: 5000 })).release();
    ops++;
  }
  return ops / ((performance.now() - start) / 1000);
}

async function handoff(a: LockProvider, b: LockProvider, driver: string): Promise<number[]> {
  const key = `${RUN}:${driver}:handoff`;
  const samples: number[] = [];
  for (let i = 0; i < HANDOFFS; i++) {
    const held = await a.acquire(key, { ttlMs: 10_000, waitMs: 5000 });
    let acquiredAt = 0;
    const waiting = b.acquire(key, { ttlMs: 10_000, waitMs: 10_000 }).then((lease) => {
      acquiredAt = performance.now();
      return lease;
    });
    // Let the waiter reach its wait (watch set, subscribed, or polling).
    await sleep(30);
    const releasedAt = performance.now();
    await held.release();
    const next = await waiting;
    samples.push(acquiredAt - releasedAt);
    await next.release();
  }
  return samples.sort((x, y) => x - y);
}

async function measure(driver: LockDriverName): Promise<Row> {
  const a = createLockProvider(CONFIGS[driver]);
  // Two providers: two connections/sessions, as two scheduler instances would have.
  const b = driver === 'local' ? a : createLockProvider(CONFIGS[driver]);
  try {
    const opsPerSec = await uncontended(a, driver);
    const samples = await handoff(a, b, driver);
    return { driver, opsPerSec, p50: percentile(samples, 50), p99: percentile(samples, 99) };
  } finally {
    await a.close();
    if (b !== a) await b.close();
  }
}

async function main(): Promise<void> {
  console.log(`machine before: ${machineLoad()}`);
  const only = process.argv.slice(2) as LockDriverName[];
  const drivers = (Object.keys(CONFIGS) as LockDriverName[]).filter(
    (d) => only.length === 0 || only.includes(d) || d === 'local',
  );
  const rows: Row[] = [];
  for (const driver of drivers) {
    try {
      rows.push(await measure(driver));
    } catch (error) {
      console.error(`${driver}: ${(error as Error).message} (run \`bash scripts/services.sh\`)`);
      process.exitCode = 1;
    }
  }
  const local = rows.find((r) => r.driver === 'local');
  const fmt = (n: number, d = 2): string => n.toFixed(d);
  const lines = [
    '| driver | acquire+release ops/s | vs local | hand-off p50 ms | hand-off p99 ms | p50 vs local |',
    '|---|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.driver} | ${fmt(r.opsPerSec, 0)} | ${local ? fmt(r.opsPerSec / local.opsPerSec, 4) : '-'}x | ` +
        `${fmt(r.p50)} | ${fmt(r.p99)} | ${local && local.p50 > 0 ? fmt(r.p50 / local.p50, 1) : '-'}x |`,
    ),
  ];
  console.log(
    `locks benchmark: ${UNCONTENDED_BUDGET_MS} ms uncontended per driver, ${HANDOFFS} hand-offs, loopback, node ${process.version}`,
  );
  console.log(lines.join('\n'));
  console.log(`machine after: ${machineLoad()}`);
}

void main();
