import { Logger } from '@nestjs/common';
import { AddressInfo, Server, Socket, connect, createServer } from 'node:net';
import { DataSource } from 'typeorm';
import { ManualClock } from '@baton/time';
import { eventually } from '../../../../test/support/processes';
import { ENTITIES } from '../entities';
import { createDataSource } from './data-source.factory';
import { openDataSource } from './open-data-source';
import { TestDatabase, mysqlTestDatabase } from './testing/test-databases';

const MYSQL_HOST = process.env.BATON_TEST_MYSQL_HOST ?? '127.0.0.1';
const MYSQL_PORT = Number(process.env.BATON_TEST_MYSQL_PORT ?? 3306);

/** A logger that keeps its warnings. */
class Kept extends Logger {
  readonly warnings: string[] = [];
  override warn(message: unknown): void {
    this.warnings.push(String(message));
  }
}

/** A free loopback port: nothing listens on it once this returns. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Forwards `port` to the real MariaDB: the database "comes up" there. */
async function forward(port: number, to: { host: string; port: number }): Promise<Server> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(to.port, to.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return server;
}

/**
 * A scheduler (or the migration step) started before its database answers waits for it, for at
 * most BATON_MYSQL_START_WAIT_MS, instead of exiting at once; what is not a matter of waiting (a
 * refused login) ends the start at once. On the machine's MariaDB, behind a port that is first
 * closed and then forwarded to it.
 */
describe('openDataSource on MariaDB', () => {
  let db: TestDatabase;
  let clock: ManualClock;
  let logger: Kept;
  let proxy: Server | undefined;
  const opened: DataSource[] = [];

  beforeAll(async () => {
    db = await mysqlTestDatabase();
  });
  beforeEach(() => {
    clock = new ManualClock();
    logger = new Kept();
  });
  afterEach(async () => {
    for (const ds of opened.splice(0)) if (ds.isInitialized) await ds.destroy();
    proxy?.close();
    proxy = undefined;
  });
  afterAll(() => db?.drop());

  const config = (port: number) => {
    if (db.config.type !== 'mysql') throw new Error('a MariaDB test database');
    return { ...db.config, port };
  };

  it('waits for a server that is not up yet, saying so, and opens once it answers', async () => {
    const port = await freePort();
    const started = openDataSource(
      () => createDataSource(config(port), ENTITIES),
      60_000,
      clock,
      logger,
    );
    // Two refused tries, each followed by a warning and a pause on the clock (250 ms, 500 ms).
    for (const [seen, pause] of [250, 500].entries()) {
      await eventually(
        async () => (logger.warnings.length > seen ? true : undefined),
        10_000,
        `warning ${seen + 1}`,
      );
      expect(logger.warnings[seen]).toMatch(
        new RegExp(
          `^the database did not answer \\(.*ECONNREFUSED.*\\): trying again in ${pause} ms, for 60 s more \\(BATON_MYSQL_START_WAIT_MS\\)$`,
        ),
      );
      // The server comes up during the second pause.
      if (seen === 1) proxy = await forward(port, { host: MYSQL_HOST, port: MYSQL_PORT });
      await clock.advance(pause);
    }
    const ds = await started;
    opened.push(ds);
    expect(await ds.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    expect(logger.warnings).toHaveLength(2);
  });

  it('gives up once the wait is over, with the last error', async () => {
    const port = await freePort();
    let failure: unknown;
    const started = openDataSource(
      () => createDataSource(config(port), ENTITIES),
      600,
      clock,
      logger,
    ).catch((err: unknown) => (failure = err));
    await eventually(async () => (logger.warnings.length === 1 ? true : undefined), 10_000);
    await clock.advance(250);
    await eventually(async () => (logger.warnings.length === 2 ? true : undefined), 10_000);
    // The second pause is what is left of the wait: 350 ms, not 500.
    expect(logger.warnings[1]).toMatch(/trying again in 350 ms/);
    await clock.advance(350);
    await started;
    expect(String(failure)).toMatch(/ECONNREFUSED/);
    expect(logger.warnings).toHaveLength(2);
  });

  it('ends at once when the server answers with a refusal that waiting does not mend', async () => {
    if (db.config.type !== 'mysql') throw new Error('a MariaDB test database');
    const wrong = { ...db.config, password: 'not-the-password', user: 'baton_no_such_user' };
    await expect(
      openDataSource(() => createDataSource(wrong, ENTITIES), 60_000, clock, logger),
    ).rejects.toThrow(/Access denied/);
    expect(logger.warnings).toEqual([]);
  });
});
