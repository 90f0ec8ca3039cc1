import { TcpProxy } from '../libs/locks/test/fixtures/tcp-proxy';
import { Api, Backend, productionBackend, startScheduler } from './support/baton';
import { RunningProcess, eventually } from './support/processes';

jest.setTimeout(120_000);

interface Readiness {
  status: string;
  details: Record<string, { status: string; message?: string }>;
}

/**
 * Readiness follows the backends: the scheduler reaches MariaDB through a TCP proxy, the proxy
 * cuts every connection and refuses new ones, and `/health/ready` turns 503 naming the database
 * while `/health/live` stays 200; when the proxy forwards again, readiness comes back by itself.
 */
describe('health probes', () => {
  let backend: Backend;
  let proxy: TcpProxy;
  let scheduler: RunningProcess;
  let api: Api;

  beforeAll(async () => {
    backend = await productionBackend();
    proxy = await TcpProxy.start('127.0.0.1', 3306);
    scheduler = await startScheduler(backend, { BATON_MYSQL_PORT: String(proxy.port) });
    api = new Api(scheduler.url);
  });

  afterAll(async () => {
    await scheduler?.stop();
    await proxy?.close();
    await backend?.cleanup();
  });

  it('is ready with every backend up, names the database when it goes away, and recovers', async () => {
    const ready = await api.call<Readiness>('GET', '/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.data.status).toBe('ok');
    expect(ready.data.details).toMatchObject({
      database: { status: 'up' },
      queue: { status: 'up' },
      locks: { status: 'up' },
    });

    proxy.disconnect();
    const cut = Date.now();
    const down = await eventually(
      async () => {
        const res = await api.call<Readiness>('GET', '/health/ready');
        return res.status === 503 ? res : undefined;
      },
      30_000,
      'readiness turning 503 once the database is unreachable',
    );
    console.log(`readiness went 503 ${Date.now() - cut} ms after the database was cut`);
    expect(down.code).toBe(50301);
    expect(down.message).toContain('database');
    expect(down.data.details.database.status).toBe('down');
    expect(down.data.details.queue.status).toBe('up');
    // Alive all along: a liveness probe must not restart a process that only waits for its database.
    expect((await api.call('GET', '/health/live')).status).toBe(200);

    proxy.restore();
    const back = Date.now();
    await eventually(
      async () => ((await api.call('GET', '/health/ready')).status === 200 ? true : undefined),
      60_000,
      'readiness back once the database answers again',
    );
    console.log(`readiness back ${Date.now() - back} ms after the database returned`);
  });
});
