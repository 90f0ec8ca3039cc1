import { Connection, createConnection } from 'mysql2/promise';
import { DataSource } from 'typeorm';
import { systemClock } from '@baton/time';
import { eventually } from '../../../../test/support/processes';
import { mysqlTestDatabase, TestDatabase } from './testing/test-databases';
import { createDataSource } from './data-source.factory';
import { TransactionRunner } from './transaction-runner';

/**
 * MySQL picks one transaction of a deadlock as its victim and rolls it back whole. A single
 * statement (a worker's heartbeat or progress) that is the victim changed nothing: it runs again.
 */
describe('TransactionRunner on MySQL', () => {
  let testDb: TestDatabase;
  let ds: DataSource;
  let other: Connection;
  let watcher: Connection;

  beforeAll(async () => {
    testDb = await mysqlTestDatabase();
    ds = createDataSource(testDb.config, []);
    await ds.initialize();
    const { host, port, user, password, database } = testDb.config as {
      host: string;
      port: number;
      user: string;
      password: string;
      database: string;
    };
    other = await createConnection({ host, port, user, password, database });
    watcher = await createConnection({ host, port, user, password, database });
  });

  afterAll(async () => {
    await other?.end();
    await watcher?.end();
    await ds?.destroy();
    await testDb?.drop();
  });

  beforeEach(async () => {
    await ds.query('DROP TABLE IF EXISTS t');
    await ds.query('CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB');
    const rows = Array.from({ length: 60 }, (_, i) => `(${i + 1}, 0)`).join(', ');
    await ds.query(`INSERT INTO t (id, v) VALUES ${rows}`);
  });

  /** Transactions that wait for a row lock now. */
  const lockWaits = async (): Promise<number> => {
    const [rows] = await watcher.query(
      "SELECT COUNT(*) AS n FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT'",
    );
    return Number((rows as { n: number }[])[0].n);
  };

  it('runs a single statement again when it was the victim of a deadlock', async () => {
    const runner = new TransactionRunner(ds, systemClock);
    // The other transaction is the heavier one (it changed 58 rows): InnoDB rolls back the
    // lighter, which is the single statement.
    await other.query('BEGIN');
    await other.query('UPDATE t SET v = v + 1 WHERE id > 2');
    await other.query('SELECT v FROM t WHERE id = 2 FOR UPDATE');
    // Locks row 1, then waits for row 2.
    const single = runner.single((m) => m.query('UPDATE t SET v = v + 10 WHERE id IN (1, 2)'));
    // Waits for the state: the statement waiting on row 2. MariaDB refreshes INNODB_TRX only
    // when it was last read over 100 ms ago, so it is asked every 250 ms.
    await eventually(
      async () => ((await lockWaits()) > 0 ? true : undefined),
      60_000,
      'the single statement waiting for row 2',
      250,
    );
    // Row 1 is held by the single statement: a cycle; the single statement is rolled back.
    await other.query('UPDATE t SET v = v + 1 WHERE id = 1');
    await other.query('COMMIT');
    await expect(single).resolves.toBeDefined();
    const rows = (await ds.query('SELECT id, v FROM t WHERE id IN (1, 2, 3) ORDER BY id')) as {
      id: number;
      v: number;
    }[];
    expect(rows.map((r) => [Number(r.id), Number(r.v)])).toEqual([
      [1, 11],
      [2, 10],
      [3, 1],
    ]);
  });
});
