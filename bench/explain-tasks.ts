/**
 * `npm run explain:tasks`: a million tasks in MariaDB, then the plan of every query shape the task
 * list (`GET /v1/tasks`) can build, each filter and each order, with and without a cursor, built by
 * the scheduler's own query code. A plan that reads the whole table is flagged. Also times a
 * batch of inserts with the list's indexes and without them (their cost on writes).
 *
 * Env: EXPLAIN_DB (default baton_explain, dropped and made anew), EXPLAIN_ROWS (1000000),
 * MYSQL_HOST/PORT/USER/PASSWORD (127.0.0.1:3306 root, no password).
 */
import { DataSource } from 'typeorm';
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
import { fillTasks, mysqlFrom } from './task-fill';

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
  [
    'created range',
    { createdFrom: 1_700_000_000_000 + 50_000_000, createdTo: 1_700_000_000_000 + 51_000_000 },
  ],
  ['name_prefix', { namePrefix: 'reindex warehouse' }],
  ['search (words)', { nameWords: searchWords('nightly orders') }],
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
        key: o.sort === 'priority' ? 5 : 1_700_000_000_000 + 50_000_000,
      };

async function explain(ds: DataSource): Promise<number> {
  let flagged = 0;
  const line = (cells: string[]): string =>
    cells.map((c, i) => c.padEnd([18, 15, 6, 7, 9, 24, 10, 0][i] ?? 0)).join(' ');
  console.log(line(['filter', 'order', 'cursor', 'ms', 'type', 'key', 'rows', 'extra / flag']));
  for (const [name, filter] of FILTERS) {
    for (const order of ORDERS) {
      for (const cursor of [false, true]) {
        const q = taskListQuery(ds, filter, cursor ? seekOf(order) : undefined, 51, order);
        const [sql, params] = q.getQueryAndParameters();
        const plan = (await ds.query(`EXPLAIN ${sql}`, params)) as PlanRow[];
        const t0 = performance.now();
        await ds.query(sql, params);
        const ms = performance.now() - t0;
        // The first row drives the plan (the label filter starts from the label table).
        const main = plan[0];
        const full = plan.some((p) => p.type === 'ALL');
        if (full) flagged++;
        const extra = [
          main.Extra ?? '',
          full
            ? '<< FULL TABLE SCAN'
            : main.type === 'index'
              ? '(walks an index in order, stops at 51 rows)'
              : '',
        ].join(' ');
        console.log(
          line([
            name,
            `${order.sort} ${order.dir}`,
            cursor ? 'yes' : 'no',
            ms.toFixed(1),
            `${main.table === 't' ? '' : `${main.table}:`}${main.type}`,
            String(main.key),
            String(main.rows),
            extra.trim(),
          ]),
        );
      }
    }
  }
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
  console.log(`\n${flagged} query shape(s) read the whole table`);
  await ds.destroy();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
