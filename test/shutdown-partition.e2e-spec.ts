import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findOverlaps, readRunLogs } from '../apps/worker-template/src/run-log/run-log-analysis';
import { TcpProxy } from '../libs/locks/test/fixtures/tcp-proxy';
import {
  Api,
  Backend,
  productionBackend,
  startScheduler,
  startTemplateWorker,
  zooKeeperAnswers,
} from './support/baton';
import { RunningProcess, eventually, schedule } from './support/processes';

jest.setTimeout(300_000);

const TASKS = 12;
const GRACE_MS = 6000;

/**
 * SIGTERM while a backend has gone silent (a partition: nothing forwarded, nothing closed) between
 * one scheduler and MariaDB, Redis or ZooKeeper (its lock backend): the scheduler exits within
 * BATON_SHUTDOWN_GRACE_MS anyway, while the partition still lasts, and the tasks it was driving
 * finish on the other instance, each once, no two runs holding one lock key at once. Two
 * schedulers on MariaDB + Redis (+ ZooKeeper locks), the first reaching them through a proxy.
 */
describe('SIGTERM during a partition', () => {
  let backend: Backend;
  let dir: string;
  const procs: RunningProcess[] = [];
  const proxies: TcpProxy[] = [];

  beforeEach(async () => {
    backend = await productionBackend();
    dir = mkdtempSync(join(tmpdir(), 'baton-partition-'));
  });

  afterEach(async () => {
    await Promise.all(procs.splice(0).map((p) => p.kill9()));
    await Promise.all(proxies.splice(0).map((p) => p.close()));
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(['MariaDB', 'Redis', 'ZooKeeper'])(
    'with %s silent, the scheduler exits within its grace and its tasks finish elsewhere',
    async (silent) => {
      if (silent === 'ZooKeeper') await zooKeeperAnswers();
      const mysql = await TcpProxy.start('127.0.0.1', 3306);
      const redis = await TcpProxy.start('127.0.0.1', 6379);
      const zookeeper = await TcpProxy.start('127.0.0.1', 2181);
      proxies.push(mysql, redis, zookeeper);
      // ZooKeeper's case: lock keys there (in a root of its own), each task holding one.
      const root = `/baton-e2e/shutdown-${randomBytes(4).toString('hex')}`;
      const locks = (port: number): NodeJS.ProcessEnv =>
        silent === 'ZooKeeper'
          ? {
              BATON_LOCK: 'zookeeper',
              BATON_ZOOKEEPER: `127.0.0.1:${port}`,
              BATON_ZOOKEEPER_ROOT: root,
            }
          : {};
      const partitioned = await startScheduler(backend, {
        BATON_INSTANCE_ID: 'cut-off',
        BATON_MYSQL_PORT: String(mysql.port),
        BATON_REDIS_PORT: String(redis.port),
        BATON_SHUTDOWN_GRACE_MS: String(GRACE_MS),
        ...locks(zookeeper.port),
      });
      procs.push(partitioned);
      const other = await startScheduler(backend, { BATON_INSTANCE_ID: 'other', ...locks(2181) });
      procs.push(other);
      const log = join(dir, 'runs.jsonl');
      procs.push(await startTemplateWorker('w1', `${partitioned.url},${other.url}`, log));
      const api = new Api(partitioned.url);
      const otherApi = new Api(other.url);
      await eventually(
        async () =>
          ((await otherApi.call<unknown[]>('GET', '/v1/workers')).data.length ?? 0) > 0
            ? true
            : undefined,
        30_000,
        'the worker registered',
      );
      const ids: string[] = [];
      const round = async (): Promise<void> => {
        for (let i = 0; i < TASKS; i++)
          ids.push(
            await api.create({
              create_info: { task_type: 'demo.sleep', task_name: `partition ${ids.length}` },
              params: { seconds: 3, tick_ms: 200 },
              ...(silent === 'ZooKeeper' ? { lock_keys: [`${root}-${ids.length % 4}`] } : {}),
            }),
          );
      };
      await round();
      // Some of them started by the instance about to be cut off (its drives are what it must
      // leave behind without losing or doubling them). Both instances take from one queue: when
      // the other one started every task so far (a busy box can make the proxied one slow to
      // claim), another round.
      const driven = await eventually(
        async () => {
          const mine: string[] = [];
          let waiting = 0;
          for (const id of ids) {
            const events = await otherApi.events(id);
            if (events.some((e) => e.to === 'RUNNING' && e.actor === 'scheduler:cut-off'))
              mine.push(id);
            if (!events.some((e) => e.to === 'RUNNING')) waiting++;
          }
          if (mine.length === 0 && waiting === 0 && ids.length < TASKS * 5) await round();
          return mine.length > 0 ? mine : undefined;
        },
        180_000,
        'tasks started by the scheduler to be cut off',
      );
      ({ MariaDB: mysql, Redis: redis, ZooKeeper: zookeeper })[silent]?.blackhole();
      // Readiness answers, and says which backend is down (each probe is bounded).
      const asked = schedule();
      const ready = await fetch(`${partitioned.url}/health/ready`, {
        signal: AbortSignal.timeout(60_000),
      });
      const readyMs = asked.elapsed();
      const readyBody = (await ready.json()) as { message: string };
      expect(ready.status).toBe(503);
      expect(readyBody.message).toMatch(
        { MariaDB: /database/, Redis: /queue/, ZooKeeper: /locks/ }[silent] ?? /./,
      );
      const stopped = schedule();
      partitioned.proc.kill('SIGTERM');
      // The exit comes while the partition still lasts: nothing is restored before it.
      await eventually(
        async () =>
          partitioned.proc.exitCode !== null || partitioned.proc.signalCode !== null
            ? true
            : undefined,
        120_000,
        `the scheduler exiting after SIGTERM with ${silent} silent`,
      );
      const exitedAfter = stopped.elapsed();
      const forced = /shutdown still going after \d+ ms/.test(partitioned.output());
      console.log(
        `${silent} silent: ${driven.length} of ${ids.length} tasks started by it; /health/ready answered 503 in ${readyMs} ms (${readyBody.message}); exited ${exitedAfter} ms after SIGTERM (grace ${GRACE_MS} ms), ${forced ? 'by the deadline' : 'on its own'}`,
      );
      mysql.restore();
      redis.restore();
      zookeeper.restore();

      // Every task finishes, on the other instance where the cut-off one left it, once.
      const done = await eventually(
        async () => {
          const all = await Promise.all(ids.map((id) => otherApi.task(id)));
          return all.every((t) => t.task_status === 'FINISH') ? all : undefined;
        },
        180_000,
        `all ${ids.length} tasks finishing`,
      );
      expect(done.filter((t) => t.outcome !== 'SUCCESS').map((t) => t.task_id)).toEqual([]);
      const idSet = new Set(ids);
      expect(findOverlaps(readRunLogs([log]).filter((r) => idSet.has(r.task_id)))).toEqual([]);
    },
  );
});
