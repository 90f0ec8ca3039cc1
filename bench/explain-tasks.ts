/**
 * `npm run explain:tasks`: a million tasks in MariaDB, then the plan of every query shape the task
 * list (`GET /v1/tasks`) can build, each filter and each order, with and without a cursor, built by
 * the scheduler's own query code. A plan that reads the whole table is flagged. Also times a
 * batch of inserts with the list's indexes and without them (their cost on writes).
 *
 * Env: EXPLAIN_DB (default baton_explain, dropped and made anew), EXPLAIN_ROWS (1000000),
 * MYSQL_HOST/PORT/USER/PASSWORD (127.0.0.1:3306 root, no password).
 */
import { DataSource, QueryRunner } from 'typeorm';
import { createDataSource } from '../apps/scheduler/src/database';
import { ENTITIES } from '../apps/scheduler/src/entities';
import {
  TaskFilter,
  TaskOrder,
  TaskSeek,
  searchWords,
  taskListQuery,
} from '../apps/scheduler/src/task-store';
import { TaskStatus } from '@baton/task-contract';
import { FILL_T0, fillTasks, mysqlFrom } from './task-fill';

const DB = process.env.EXPLAIN_DB ?? 'baton_explain';
const ROWS = Number(process.env.EXPLAIN_ROWS ?? 1_000_000);

interface PlanRow {
  table: string | null;
  type: string | null;
  key: string | null;
  rows: number | string | null;
  Extra: string | null;
}

const FILTERS: [string, TaskFilter][] = [
  ['(none)', {}],
  ['task_type', { taskType: 'etl.load' }],
  ['status', { status: [TaskStatus.RUNNING] }],
  ['status x2', { status: [TaskStatus.RUNNING, TaskStatus.PAUSE] }],
  ['outcome', { outcome: [TaskStatus.FAIL] }],
  ['tenant', { tenant: 'team-7' }],
  ['label', { label: { key: 'team', value: 'dba' } }],
  ['created range', { createdFrom: FILL_T0 + 50_000_000, createdTo: FILL_T0 + 51_000_000 }],
  ['name_prefix', { namePrefix: 'reindex warehouse' }],
  ['search common', { nameWords: searchWords('nightly orders') }],
  ['search rarer', { nameWords: searchWords('backup berlin') }],
  ['search (id)', { taskId: '01K00000000000000000500000' }],
  ['parent_task_id', { parentTaskId: '01K00000000000000000400000' }],
  ['control_task_id', { controlTaskId: '01K00000000000000000400000' }],
  ['worker', { workerId: 'worker-17' }],
  ['attempts_min=2', { attemptsMin: 2 }],
  ['tenant+status', { tenant: 'team-7', status: [TaskStatus.FAIL] }],
  ['type+outcome', { taskType: 'etl.load', outcome: [TaskStatus.FAIL] }],
];

const ORDERS: TaskOrder[] = [
  { sort: 'created', dir: 'desc' },
  { sort: 'created', dir: 'asc' },
  { sort: 'updated', dir: 'desc' },
  { sort: 'priority', dir: 'desc' },
];

/** A cursor in the middle of the table, in the order's terms. */
const seekOf = (o: TaskOrder): TaskSeek =>
  o.sort === 'created'
    ? { taskId: '01K00000000000000000500000' }
    : {
        taskId: '01K00000000000000000500000',
        key: o.sort === 'priority' ? 5 : FILL_T0 + 500_000_000,
      };

/** Rows the server read for the statements since `FLUSH STATUS` (its handler counters). */
async function rowsRead(q: QueryRunner): Promise<number> {
  const rows = (await q.query("SHOW SESSION STATUS LIKE 'Handler_read%'")) as {
    Variable_name: string;
    Value: string;
  }[];
  return rows
    .filter((r) => r.Variable_name !== 'Handler_read_retry')
    .reduce((n, r) => n + Number(r.Value), 0);
}

/**
 * Prints each shape's plan, its time and the rows it read for a page of 51, and flags a plan of
 * the whole table (type ALL) or any that read more than a tenth of it: an index walked in order
 * whose filter matches late is as bad as a scan. Returns how many were flagged.
 */
async function explain(ds: DataSource): Promise<number> {
  let flagged = 0;
  const q = ds.createQueryRunner();
  const line = (cells: string[]): string =>
    cells.map((c, i) => c.padEnd([16, 14, 4, 8, 8, 9, 22, 7, 0][i] ?? 0)).join(' ');
  console.log(
    line(['filter', 'order', 'cur', 'ms', 'read', 'type', 'key', 'rows', 'extra / flag']),
  );
  for (const [name, filter] of FILTERS) {
    for (const order of ORDERS) {
      for (const cursor of [false, true]) {
        const query = taskListQuery(ds, filter, cursor ? seekOf(order) : undefined, 51, order);
        const [sql, params] = query.getQueryAndParameters();
        const plan = (await q.query(`EXPLAIN ${sql}`, params)) as PlanRow[];
        await q.query('FLUSH STATUS');
        const t0 = performance.now();
        await q.query(sql, params);
        const ms = performance.now() - t0;
        const read = await rowsRead(q);
        // The first row drives the plan (the label filter starts from the label table).
        const main = plan[0];
        const full = plan.some((p) => p.type === 'ALL');
        const many = read > ROWS / 10;
        if (full || many) flagged++;
        const flag = full ? '<< FULL TABLE SCAN' : many ? '<< READS OVER A TENTH OF THE TABLE' : '';
        console.log(
          line([
            name,
            `${order.sort} ${order.dir}`,
            cursor ? 'yes' : 'no',
            ms.toFixed(1),
            String(read),
            `${main.table === 't' ? '' : `${main.table}:`}${main.type}`,
            String(main.key),
            String(main.rows),
            `${main.Extra ?? ''} ${flag}`.trim(),
          ]),
        );
      }
    }
  }
  await q.release();
  return flagged;
}

/** The new indexes' cost on inserts: the same rows into a copy of the table with and without them. */
async function insertCost(ds: DataSource): Promise<void> {
  const NEW = [
    'ix_task_parent',
    'ix_task_control',
    'ix_task_worker',
    'ix_task_outcome',
    'ix_task_attempt',
    'ix_task_name',
    'ix_task_updated',
    'ix_task_priority',
  ];
  await ds.query('DROP TABLE IF EXISTS bt_with, bt_without');
  await ds.query('CREATE TABLE bt_with LIKE baton_task');
  await ds.query('CREATE TABLE bt_without LIKE baton_task');
  await ds.query(
    `ALTER TABLE bt_without ${NEW.map((i) => `DROP INDEX ${i}`).join(', ')}, DROP INDEX ft_task_name, DROP COLUMN name_words`,
  );
  const cols = (
    (await ds.query(
      "SELECT column_name AS c FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'bt_without' ORDER BY ordinal_position",
    )) as { c: string }[]
  )
    .map((r) => r.c)
    .join(', ');
  const batch = 200;
  const batches = 100;
  const time = { bt_with: 0, bt_without: 0 };
  for (let b = 0; b < batches; b++) {
    for (const table of b % 2
      ? (['bt_with', 'bt_without'] as const)
      : (['bt_without', 'bt_with'] as const)) {
      const t0 = performance.now();
      await ds.query(
        `INSERT INTO ${table} (${cols}) SELECT ${cols} FROM baton_task WHERE task_id >= ? ORDER BY task_id LIMIT ${batch}`,
        [`01K${String(b * batch * 7 + 1).padStart(23, '0')}`],
      );
      time[table] += performance.now() - t0;
    }
  }
  const per = (ms: number): string => `${((ms / (batch * batches)) * 1000).toFixed(0)} µs a task`;
  console.log(
    `\ninserts, ${batches} batches of ${batch} rows into an empty copy of the table: without the list's indexes ${per(time.bt_without)}, with them ${per(time.bt_with)} (x${(time.bt_with / time.bt_without).toFixed(2)})`,
  );
  await ds.query('DROP TABLE bt_with, bt_without');
}

async function main(): Promise<void> {
  const config = mysqlFrom(DB);
  const ds = createDataSource(config, ENTITIES);
  const started = Date.now();
  await fillTasks(config, ds, ROWS);
  console.log(
    `${ROWS} tasks in ${DB} in ${((Date.now() - started) / 1000).toFixed(0)} s (this machine is shared: times are rough)\n`,
  );
  const flagged = await explain(ds);
  await insertCost(ds);
  console.log(`\n${flagged} query shape(s) flagged`);
  await ds.destroy();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
