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
const elt = (expr: string, values: readonly string[]): string =>
  `ELT(1 + ${expr} % ${values.length}, ${values.map((v) => `'${v}'`).join(', ')})`;

/**
 * Makes `database` anew (dropped if there), runs the scheduler's migrations, and fills it with
 * `rows` tasks by INSERT ... SELECT over MariaDB's sequence tables, 100,000 a statement: eight
 * types, 26 tenants, names from a few words and a number, most tasks finished (outcomes mostly
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
    ? "CASE WHEN seq % 100 < 86 THEN 'FINISH' WHEN seq % 100 < 90 THEN 'RUNNING' WHEN seq % 100 < 94 THEN 'INIT' WHEN seq % 100 < 97 THEN 'FAIL' ELSE 'PAUSE' END"
    : "CASE WHEN seq % 100 < 97 THEN 'FINISH' ELSE 'PAUSE' END";
  const id = (expr: string): string => `CONCAT('01K', LPAD(${expr}, 23, '0'))`;
  for (let from = 1; from <= rows; from += 100_000) {
    const to = Math.min(rows, from + 99_999);
    await ds.query(`
      INSERT INTO baton_task (task_id, task_type, task_name, tenant, labels, status, version, attempt, moves,
        priority, blocking, repetition, params, lock_keys, worker_id, worker_url, parent_task_id,
        control_task_id, max_retry, fence, outcome, cancel_requested, created_at, updated_at,
        started_at, finished_at, result)
      SELECT ${id('seq')}, ${elt('seq', TYPES)},
        CONCAT(${elt('seq', VERBS)}, ' ', ${elt('(seq DIV 10)', OBJECTS)}, ' ', seq % 1000),
        IF(seq % 3 = 0, 'default', CONCAT('team-', seq % 25)),
        IF(seq % 10 = 1, '{"team":"dba"}', '{}'), st, 3, IF(st = 'INIT', 0, 1 + (seq % 50 = 0) + (seq % 200 = 0)), 0,
        (seq * 7) % 10, 'SYNC', 'SIMPLE', '{"n":1}', '[]',
        IF(st = 'INIT', NULL, CONCAT('worker-', seq % 40)), IF(st = 'INIT', NULL, 'http://127.0.0.1:9'),
        IF(seq % 10 = 3, ${id('seq - seq % 1000 + 1')}, NULL),
        IF(seq % 20 = 7, ${id('seq - seq % 200 + 1')}, NULL),
        2, 1,
        IF(st = 'FINISH', CASE WHEN r2 < 90 THEN 'SUCCESS' WHEN r2 < 96 THEN 'FAIL' WHEN r2 < 99 THEN 'CANCELLED' ELSE 'ROLLBACK' END, NULL),
        0, ${FILL_T0} + seq * 1000, ${FILL_T0} + seq * 1000 + (seq * 7919) % 3600000,
        IF(st = 'INIT', NULL, ${FILL_T0} + seq * 1000 + 500),
        IF(st = 'FINISH', ${FILL_T0} + seq * 1000 + (seq * 7919) % 3600000, NULL),
        IF(st = 'FINISH', '{"ok":true}', NULL)
      FROM (SELECT seq, seq % 100 AS r, (seq DIV 100) % 100 AS r2, ${status} AS st
            FROM seq_${from}_to_${to}) s`);
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
