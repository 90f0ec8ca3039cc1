/**
 * Helpers of the topology benchmark (bench/topology.bench.ts): Baton's definitions of the shapes,
 * what the rows say about the node tasks of one run (both systems write the scheduler's schema,
 * so one query reads both), the round kept of each shape and system, and the report.
 */
import { Pool, RowDataPacket } from 'mysql2/promise';
import { BenchError, percentile, sleep } from './bench-support';

export type Shape = 'simple' | 'fan-out' | 'chain';
export type System = 'Baton' | 'BullMQ';

const echo = (params: Record<string, unknown>): Record<string, unknown> => ({
  create_info: { task_type: 'demo.echo' },
  params,
});

/**
 * The fan-out: a for_each node over the run's `input.items` (one `demo.echo` task per item, at
 * most `concurrency` at once; 0: no cap), then a join that depends on it.
 */
export function fanoutDefinition(name: string, concurrency: number): Record<string, unknown> {
  return {
    name,
    description: `for_each over input.items, then a join (fork concurrency ${concurrency || 'none'})`,
    nodes: [
      {
        key: 'each',
        for_each: '{{input.items}}',
        ...(concurrency > 0 ? { concurrency } : {}),
        task: echo({ i: '{{index}}' }),
      },
      { key: 'join', depends_on: ['each'], task: echo({ n: '{{nodes.each.result.count}}' }) },
    ],
  };
}

/** The chain: `demo.echo` nodes n1 -> n2 -> ... -> n<nodes>. */
export function chainDefinition(name: string, nodes: number): Record<string, unknown> {
  return {
    name,
    description: `${nodes} nodes, each after the one before`,
    nodes: Array.from({ length: nodes }, (_, k) => ({
      key: `n${k + 1}`,
      ...(k > 0 ? { depends_on: [`n${k}`] } : {}),
      task: echo({ i: k + 1 }),
    })),
  };
}

export interface Result {
  shape: Shape;
  system: System;
  /** 0 for the warm-up. */
  round: number;
  /** Node tasks run (a fan-out: the items and the join; simple: the tasks). */
  nodes: number;
  /** From the first request (Baton) or the first row write (BullMQ) to the end of the run. */
  wallMs: number;
  /**
   * Chain: each node's first RUNNING event minus its parent's finished_at, ascending. Fan-out:
   * the join's alone (its RUNNING event minus the last item's finished_at). Simple: none.
   */
  handoff: number[];
  /**
   * The first part of each hand-off, ascending: the parent's finished_at to the node's task row
   * created_at (Baton: the change feed and the run's evaluation). Empty when the rows were all
   * made up front (BullMQ flows) or there is no hand-off.
   */
  toRow: number[];
  /**
   * CPU ms per node over the run: the orchestrator (scheduler or BullMQ pipeline), the worker,
   * the MariaDB server and the Redis server.
   */
  cpu: { orchestrator: number; worker: number; mariadb: number; redis: number };
  /** SQL statements per node (MariaDB's global Questions counter: whatever else uses it counts). */
  sql: number;
}

/** One node task of a run, from its row and its events (epoch ms). */
export interface NodeRow {
  name: string;
  outcome: string | null;
  created: number;
  /** Its first RUNNING event. */
  running: number;
  finished: number;
}

/** The node tasks a WHERE clause picks (`control_task_id = ?` for Baton, a name prefix for BullMQ). */
export async function nodeRows(db: Pool, where: string, param: string): Promise<NodeRow[]> {
  const [rows] = await db.query<RowDataPacket[]>(
    `SELECT t.task_name AS name, t.outcome AS outcome, t.created_at AS created,
            t.finished_at AS finished,
            (SELECT MIN(e.created_at) FROM baton_task_event e
              WHERE e.task_id = t.task_id AND e.to_status = 'RUNNING') AS running
       FROM baton_task t WHERE ${where}`,
    [param],
  );
  return rows.map((r) => ({
    name: String(r.name),
    outcome: r.outcome === null ? null : String(r.outcome),
    created: Number(r.created),
    running: Number(r.running),
    finished: Number(r.finished),
  }));
}

/**
 * Checks that `expected` node tasks all succeeded and that none ran before its parents ended,
 * and gives their hand-offs and the first part of each (see Result).
 */
export function handoffs(
  what: string,
  shape: Shape,
  rows: NodeRow[],
  expected: number,
): Pick<Result, 'handoff' | 'toRow'> {
  if (rows.length !== expected)
    throw new BenchError(`${what}: ${rows.length} node tasks, not ${expected}`);
  const bad = rows.filter((r) => r.outcome !== 'SUCCESS');
  if (bad.length > 0)
    throw new BenchError(`${what}: ${bad.length} node tasks did not succeed (${bad[0].name})`);
  const byStart = [...rows].sort((a, b) => a.running - b.running);
  // Each node that waited for others, with when the last of them ended.
  const after: [NodeRow, number][] =
    shape === 'chain'
      ? byStart.slice(1).map((r, k) => [r, byStart[k].finished])
      : [[byStart[byStart.length - 1], Math.max(...byStart.slice(0, -1).map((r) => r.finished))]];
  const asc = (xs: number[]): number[] => xs.sort((a, b) => a - b);
  const handoff = asc(after.map(([r, parentEnd]) => r.running - parentEnd));
  if (handoff[0] < 0)
    throw new BenchError(`${what}: a node ran ${-handoff[0]} ms before its parent ended`);
  const toRow = asc(after.map(([r, parentEnd]) => r.created - parentEnd));
  return { handoff, toRow: toRow[0] < 0 ? [] : toRow };
}

/**
 * Waits until the task `taskId` is FINISH (polling its row every `everyMs`) and gives its
 * finished_at and outcome; fails past `until`.
 */
export async function waitForTask(
  db: Pool,
  taskId: string,
  until: number,
  what: string,
  everyMs = 25,
): Promise<{ finished: number; outcome: string | null }> {
  for (;;) {
    const [rows] = await db.query<RowDataPacket[]>(
      'SELECT status, outcome, finished_at FROM baton_task WHERE task_id = ?',
      [taskId],
    );
    const r = rows[0];
    if (r && r.status === 'FINISH')
      return {
        finished: Number(r.finished_at),
        outcome: r.outcome === null ? null : String(r.outcome),
      };
    if (Date.now() > until)
      throw new BenchError(
        `${what}: not finished in time (task ${taskId} ${r?.status ?? 'absent'})`,
      );
    await sleep(everyMs);
  }
}

/** Of each shape and system, the measured round of median wall time (the lower of two middles). */
export function kept(all: readonly Result[]): Result[] {
  const groups = new Map<string, Result[]>();
  for (const r of all.filter((x) => x.round > 0))
    groups.set(`${r.shape}/${r.system}`, [...(groups.get(`${r.shape}/${r.system}`) ?? []), r]);
  const order = (r: Result): number => ['simple', 'fan-out', 'chain'].indexOf(r.shape);
  return [...groups.values()]
    .map((rounds) => [...rounds].sort((a, b) => a.wallMs - b.wallMs))
    .map((sorted) => sorted[Math.floor((sorted.length - 1) / 2)])
    .sort((a, b) => order(a) - order(b) || a.system.localeCompare(b.system));
}

const f0 = (n: number): string => (Number.isFinite(n) ? n.toFixed(0) : '-');
const f1 = (n: number): string => (Number.isFinite(n) ? n.toFixed(1) : '-');
const f2 = (n: number): string => (Number.isFinite(n) ? n.toFixed(2) : '-');
export const perSecond = (r: Result): number => r.nodes / (r.wallMs / 1000);

/** One round, as it ends. */
export function line(label: string, r: Result): string {
  const h = r.handoff;
  return (
    `${label.padEnd(26)} ${String(r.nodes).padStart(5)} nodes  wall ${f0(r.wallMs).padStart(6)} ms  ` +
    `${f0(perSecond(r)).padStart(5)} nodes/s  ${f2(r.wallMs / r.nodes)} ms/node` +
    (h.length ? `  hand-off p50/p99 ${f1(percentile(h, 50))}/${f1(percentile(h, 99))} ms` : '') +
    (r.toRow.length ? ` (parent end → task row p50 ${f1(percentile(r.toRow, 50))} ms)` : '') +
    `  cpu ms/node: ${r.system === 'Baton' ? 'scheduler' : 'pipeline'} ${f2(r.cpu.orchestrator)}, ` +
    `worker ${f2(r.cpu.worker)}, MariaDB ${f2(r.cpu.mariadb)}, Redis ${f2(r.cpu.redis)}; ` +
    `SQL/node ${f1(r.sql)}`
  );
}

/** The table of the kept rounds, Baton's rows with their ratio to BullMQ's of the same shape. */
export function table(results: readonly Result[]): string {
  const peer = (r: Result): Result | undefined =>
    results.find((x) => x.shape === r.shape && x.system !== r.system);
  const ratio = (r: Result): string => {
    const p = peer(r);
    return r.system === 'Baton' && p ? `${f2(perSecond(r) / perSecond(p))}x` : '';
  };
  const pct = (xs: number[], p: number): string => (xs.length ? f1(percentile(xs, p)) : '-');
  return [
    '| shape | system | nodes | wall ms | nodes/s | wall ms/node | hand-off p50 ms | hand-off p99 ms | parent end → task row p50 ms | orchestrator CPU ms/node | worker CPU ms/node | MariaDB CPU ms/node | Redis CPU ms/node | SQL statements/node | Baton/BullMQ nodes/s |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${r.shape} | ${r.system} | ${r.nodes} | ${f0(r.wallMs)} | ${f0(perSecond(r))} | ` +
        `${f2(r.wallMs / r.nodes)} | ${pct(r.handoff, 50)} | ${pct(r.handoff, 99)} | ` +
        `${pct(r.toRow, 50)} | ${f2(r.cpu.orchestrator)} | ${f2(r.cpu.worker)} | ` +
        `${f2(r.cpu.mariadb)} | ${f2(r.cpu.redis)} | ${f1(r.sql)} | ${ratio(r)} |`,
    ),
  ].join('\n');
}

/**
 * The fan-out against each system's own simple tasks (the kept rounds, and round by round: the
 * two ran back to back), Baton's chain against BullMQ's, and the acceptance target.
 */
export function verdict(results: readonly Result[], all: readonly Result[]): string {
  const find = (shape: Shape, system: System): Result | undefined =>
    results.find((r) => r.shape === shape && r.system === system);
  const out: string[] = [];
  for (const system of ['Baton', 'BullMQ'] as const) {
    const fan = find('fan-out', system);
    const simple = find('simple', system);
    const byRound = all
      .filter((r) => r.system === system && r.shape === 'fan-out' && r.round > 0)
      .map((f) => [
        f,
        all.find((r) => r.system === system && r.shape === 'simple' && r.round === f.round),
      ])
      .map(([f, s]) => (f && s ? f2(perSecond(f) / perSecond(s)) : '-'));
    if (fan && simple)
      out.push(
        `${system} fan-out / its simple tasks: ${f2(perSecond(fan) / perSecond(simple))} ` +
          `(${f0(perSecond(fan))} nodes/s / ${f0(perSecond(simple))} tasks/s; round by round ${byRound.join(', ')})`,
      );
  }
  const chains = [find('chain', 'Baton'), find('chain', 'BullMQ')];
  if (chains[0] && chains[1])
    out.push(
      `chain per node: Baton ${f2(chains[0].wallMs / chains[0].nodes)} ms, BullMQ ` +
        `${f2(chains[1].wallMs / chains[1].nodes)} ms (${f2(chains[0].wallMs / chains[1].wallMs)}x the time)`,
    );
  const [fan, simple, bull] = [
    find('fan-out', 'Baton'),
    find('simple', 'Baton'),
    find('fan-out', 'BullMQ'),
  ];
  if (fan && simple && bull) {
    const share = perSecond(fan) / perSecond(simple);
    const ahead = perSecond(fan) / perSecond(bull);
    out.push(
      `target (fan-out >= 0.70 of Baton's simple tasks/s, and ahead of BullMQ flows): ` +
        `${share >= 0.7 && ahead > 1 ? 'MET' : 'NOT MET'} (${share.toFixed(3)} of simple, ${ahead.toFixed(3)}x BullMQ)`,
    );
  }
  return out.join('\n');
}
