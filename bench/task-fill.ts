import { createConnection } from 'mysql2/promise';
import { DataSource } from 'typeorm';
import { DatabaseConfig } from '../apps/scheduler/src/config';

/** The machine's MariaDB (MYSQL_HOST/PORT/USER/PASSWORD), on database `database`. */
export function mysqlFrom(database: string): Extract<DatabaseConfig, { type: 'mysql' }> {
  return {
    type: 'mysql',
    host: process.env.MYSQL_HOST ?? '127.0.0.1',
    port: Number(process.env.MYSQL_PORT ?? 3306),
    user: process.env.MYSQL_USER ?? 'root',
    password: process.env.MYSQL_PASSWORD ?? '',
    database,
    poolSize: 4,
  };
}

/** Creation time of task 1 in a filled database; task n was made n seconds later. */
export const FILL_T0 = 1_700_000_000_000;

const TYPES = [
  'demo.echo',
  'demo.sleep',
  'etl.load',
  'etl.extract',
  'report.daily',
  'backup.db',
  'mail.send',
  'index.rebuild',
];
const VERBS = [
  'nightly backup of',
  'reindex',
  'send invoices for',
  'load orders from',
  'daily report on',
  'sync customers of',
  'rebuild search for',
  'export ledger of',
  'import catalog into',
  'clean temp files of',
];
const OBJECTS = ['orders_db', 'billing', 'warehouse', 'eu-west', 'crm', 'ledger', 'catalog'];
const SITES = [
  'amsterdam',
  'berlin',
  'chicago',
  'dublin',
  'frankfurt',
  'helsinki',
  'istanbul',
  'jakarta',
  'lagos',
  'lisbon',
  'madrid',
  'milan',
  'montreal',
  'mumbai',
  'nairobi',
  'osaka',
  'oslo',
  'paris',
  'prague',
  'quito',
  'riga',
  'rome',
  'santiago',
  'seoul',
  'sofia',
  'stockholm',
  'sydney',
  'taipei',
  'tokyo',
  'toronto',
  'vienna',
  'warsaw',
  'zurich',
  'athens',
  'bogota',
  'cairo',
  'denver',
  'geneva',
  'hanoi',
  'lima',
];
const elt = (expr: string, values: readonly string[]): string =>
  `ELT(1 + ${expr} % ${values.length}, ${values.map((v) => `'${v}'`).join(', ')})`;

/**
 * Makes `database` anew (dropped if there), runs the scheduler's migrations, and fills it with
 * `rows` tasks by INSERT ... SELECT over MariaDB's sequence tables, 100,000 a statement: eight
 * types, 26 tenants, names of a verb, an object, a city and a number (each drawn by a hash of
 * the row's number, so that no two of these go together), most tasks finished (outcomes mostly
 * SUCCESS, some FAIL, CANCELLED, ROLLBACK), a tenth children of a parent, a twentieth driven by a
 * control task, forty workers, a few retried. `live` adds tasks that are INIT, RUNNING and FAIL
 * (with nothing due, so a scheduler started on it leaves them be); without it, only finished
 * and paused tasks, which a running scheduler never touches. Then the per-status counts and
 * index statistics.
 */
export async function fillTasks(
  config: Extract<DatabaseConfig, { type: 'mysql' }>,
  ds: DataSource,
  rows: number,
  live = true,
): Promise<void> {
  const conn = await createConnection({
    host: config.host,
    port: config.port,
    user: config.user,
    password: config.password,
  });
  await conn.query(`DROP DATABASE IF EXISTS \`${config.database}\``);
  await conn.query(`CREATE DATABASE \`${config.database}\` CHARACTER SET utf8mb4`);
  await conn.end();
  await ds.initialize();
  await ds.runMigrations();
  const status = live
    ? "CASE WHEN r < 86 THEN 'FINISH' WHEN r < 90 THEN 'RUNNING' WHEN r < 94 THEN 'INIT' WHEN r < 97 THEN 'FAIL' ELSE 'PAUSE' END"
    : "CASE WHEN r < 97 THEN 'FINISH' ELSE 'PAUSE' END";
  const id = (expr: string): string => `CONCAT('01K', LPAD(${expr}, 23, '0'))`;
  for (let from = 1; from <= rows; from += 100_000) {
    const to = Math.min(rows, from + 99_999);
    await ds.query(`
      INSERT INTO baton_task (task_id, task_type, task_name, tenant, labels, status, version, attempt, moves,
        priority, blocking, repetition, params, lock_keys, worker_id, worker_url, parent_task_id,
        control_task_id, max_retry, fence, outcome, cancel_requested, created_at, updated_at,
        started_at, finished_at, result)
      SELECT ${id('seq')}, ${elt('h', TYPES)},
        CONCAT(${elt('n', VERBS)}, ' ', ${elt('(n DIV 10)', OBJECTS)}, ' ', ${elt('(n DIV 70)', SITES)}, ' ', seq % 1000),
        IF((h DIV 80) % 26 = 0, 'default', CONCAT('team-', (h DIV 80) % 26)),
        IF(seq % 10 = 1, '{"team":"dba"}', '{}'), st, 3, IF(st = 'INIT', 0, 1 + (a < 20) + (a < 5)), 0,
        (h DIV 8) % 10, 'SYNC', 'SIMPLE', '{"n":1}', '[]',
        IF(st = 'INIT', NULL, CONCAT('worker-', w)), IF(st = 'INIT', NULL, 'http://127.0.0.1:9'),
        IF(seq % 10 = 3, ${id('seq - seq % 1000 + 1')}, NULL),
        IF(seq % 20 = 7, ${id('seq - seq % 200 + 1')}, NULL),
        2, 1,
        IF(st = 'FINISH', CASE WHEN r2 < 90 THEN 'SUCCESS' WHEN r2 < 96 THEN 'FAIL' WHEN r2 < 99 THEN 'CANCELLED' ELSE 'ROLLBACK' END, NULL),
        0, ${FILL_T0} + seq * 1000, ${FILL_T0} + seq * 1000 + (seq * 7919) % 3600000,
        IF(st = 'INIT', NULL, ${FILL_T0} + seq * 1000 + 500),
        IF(st = 'FINISH', ${FILL_T0} + seq * 1000 + (seq * 7919) % 3600000, NULL),
        IF(st = 'FINISH', '{"ok":true}', NULL)
      FROM (SELECT seq, h, n, CRC32(CONCAT('o', seq)) % 100 AS r2, CRC32(CONCAT('a', seq)) % 1000 AS a,
                   CRC32(CONCAT('w', seq)) % 40 AS w, ${status} AS st
            FROM (SELECT seq, CRC32(seq) AS h, CRC32(CONCAT('n', seq)) AS n, CRC32(CONCAT('s', seq)) % 100 AS r
                  FROM seq_${from}_to_${to}) x) s`);
    await ds.query(
      `INSERT INTO baton_task_label (task_id, label_key, label_value)
       SELECT ${id('seq')}, 'team', 'dba' FROM seq_${from}_to_${to} WHERE seq % 10 = 1`,
    );
  }
  await ds.query('DELETE FROM baton_task_count');
  await ds.query(
    'INSERT INTO baton_task_count (shard, task_type, status, n) SELECT 0, task_type, status, COUNT(*) FROM baton_task GROUP BY task_type, status',
  );
  await ds.query('ANALYZE TABLE baton_task, baton_task_label');
}
