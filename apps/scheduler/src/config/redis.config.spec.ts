import { SchedulerConfigError, loadSchedulerConfig } from './scheduler.config';

const BASE = { BATON_AUTH_MODE: 'none', BATON_QUEUE: 'redis', BATON_LOCK: 'redis' };

describe('Redis settings', () => {
  it('opens the one server of BATON_REDIS_HOST when no Cluster is named', () => {
    const config = loadSchedulerConfig({ ...BASE, BATON_REDIS_HOST: 'redis', BATON_REDIS_DB: '3' });
    const expected = { host: 'redis', port: 6379, db: 3, commandTimeoutMs: 2000 };
    expect(config.queue).toMatchObject({ driver: 'redis', redis: expected });
    expect(config.queue.driver === 'redis' && config.queue.redis.cluster).toBeUndefined();
    expect(config.locks.redis?.nodes).toEqual([expected]);
  });

  it('makes every Redis client a Cluster client with BATON_REDIS_CLUSTER_NODES', () => {
    const config = loadSchedulerConfig({
      ...BASE,
      BATON_REDIS_CLUSTER_NODES: ' 10.0.0.1:7000, redis-b:7001,[::1]:7002 ',
      BATON_REDIS_COMMAND_TIMEOUT_MS: '500',
      BATON_REDIS_HOST: 'ignored',
    });
    const cluster = [
      { host: '10.0.0.1', port: 7000 },
      { host: 'redis-b', port: 7001 },
      { host: '::1', port: 7002 },
    ];
    const expected = { host: '10.0.0.1', port: 7000, db: 0, commandTimeoutMs: 500, cluster };
    // The queue (and its lanes, rate and fair-share counts, built from it), the lock, the streams.
    expect(config.queue).toMatchObject({ driver: 'redis', redis: expected });
    expect(config.locks.redis?.nodes).toEqual([expected]);
    expect(config.logdumper.redis).toEqual(expected);
  });

  it('refuses a Cluster node that is not host:port, and a database other than 0', () => {
    for (const nodes of ['10.0.0.1', '10.0.0.1:0', 'a:7000,b:99999', '::1:7000', 'a b:7000']) {
      expect(() => loadSchedulerConfig({ ...BASE, BATON_REDIS_CLUSTER_NODES: nodes })).toThrow(
        SchedulerConfigError,
      );
    }
    expect(() =>
      loadSchedulerConfig({
        ...BASE,
        BATON_REDIS_CLUSTER_NODES: '10.0.0.1:7000',
        BATON_REDIS_DB: '2',
      }),
    ).toThrow(/BATON_REDIS_DB must be 0/);
  });
});
