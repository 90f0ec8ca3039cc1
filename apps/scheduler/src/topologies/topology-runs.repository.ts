import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, In } from 'typeorm';
import { TransactionRunner } from '../database';
import { NodeRow, NodeRowState } from './node-state';
import { TopologyHistoryEntity, TopologyNodeEntity, TopologyRunEntity } from './topology.entities';

/** A run as stored beside its centre task. */
export interface TopologyRun {
  runId: string;
  name: string;
  version: number;
  tenant: string;
  input: Record<string, unknown>;
  depth: number;
  parentRunId: string | null;
  active: boolean;
  wakeAt: number | null;
  /** How long the run may take, and when that passes (null: no deadline). */
  deadlineMs: number | null;
  deadlineAt: number | null;
  createdAt: number;
}

/** What a repair did (`retry`, `rerun`, `skip`), or a node row as it was before one changed it. */
export interface RepairRecord {
  entryId: string;
  at: number;
  action: 'retry' | 'rerun' | 'skip' | 'superseded';
  key: string | null;
  item: number | null;
  actor: string | null;
  /** For `superseded`: the row as it was. */
  row: NodeRow | null;
}

/** A run's deadline fields, from the seconds it may take (none: no deadline) and its start. */
export const deadlineOf = (
  seconds: number | undefined,
  startedAt: number,
): Pick<TopologyRun, 'deadlineMs' | 'deadlineAt'> =>
  seconds === undefined
    ? { deadlineMs: null, deadlineAt: null }
    : { deadlineMs: seconds * 1000, deadlineAt: startedAt + seconds * 1000 };

const toRun = (e: TopologyRunEntity): TopologyRun => ({
  runId: e.run_id,
  name: e.name,
  version: e.version,
  tenant: e.tenant,
  input: e.input,
  depth: e.depth,
  parentRunId: e.parent_run_id,
  active: e.active === 1,
  wakeAt: e.wake_at,
  deadlineMs: e.deadline_ms,
  deadlineAt: e.deadline_at,
  createdAt: e.created_at,
});

/** Runs and the rows of their nodes. */
@Injectable()
export class TopologyRunsRepository {
  constructor(
    private readonly db: DataSource,
    private readonly tx: TransactionRunner,
  ) {}

  insertRun(m: EntityManager, run: TopologyRun, now: number): Promise<unknown> {
    return m.insert(TopologyRunEntity, {
      run_id: run.runId,
      name: run.name,
      version: run.version,
      tenant: run.tenant,
      input: run.input,
      depth: run.depth,
      parent_run_id: run.parentRunId,
      active: 1,
      wake_at: null,
      deadline_ms: run.deadlineMs,
      deadline_at: run.deadlineMs === null ? null : now + run.deadlineMs,
      created_at: now,
      updated_at: now,
    } as never);
  }

  /** A reopened run (a retry, a re-run) has its whole deadline again, from now. */
  async restartDeadline(runId: string, now: number): Promise<void> {
    await this.tx.single((m) =>
      m
        .createQueryBuilder()
        .update(TopologyRunEntity)
        .set({ deadline_at: () => `deadline_ms + ${Math.floor(now)}` })
        .where('run_id = :runId AND deadline_ms IS NOT NULL', { runId })
        .execute(),
    );
  }

  async get(runId: string, m: EntityManager = this.db.manager): Promise<TopologyRun | undefined> {
    const e = await m.findOneBy(TopologyRunEntity, { run_id: runId });
    return e ? toRun(e) : undefined;
  }

  /**
   * Holds the run's row until the transaction ends: evaluations of one run (the change relay,
   * the API, the sweeper, on any instance) take turns. SQLite's transactions already do.
   */
  async lock(m: EntityManager, runId: string): Promise<void> {
    if (m.connection.options.type === 'better-sqlite3') return;
    await m.query('SELECT run_id FROM baton_topology_run WHERE run_id = ? FOR UPDATE', [runId]);
  }

  /**
   * The rows of a run's nodes, in key and item order. Plain SQL: every evaluation of a run reads
   * all of them (a thousand for a fan-out of a thousand), and the query builder's row mapping
   * cost more than the query.
   */
  async nodes(runId: string, m: EntityManager = this.db.manager): Promise<NodeRow[]> {
    const rows = (await m.query(
      `SELECT node_key, item, state, task_id, result, created_at, updated_at
         FROM baton_topology_node WHERE run_id = ? ORDER BY node_key, item`,
      [runId],
    )) as Record<string, unknown>[];
    return rows.map((r) => ({
      key: String(r.node_key),
      item: Number(r.item),
      state: r.state as NodeRowState,
      taskId: r.task_id === null ? null : String(r.task_id),
      result:
        r.result === null ? null : (JSON.parse(String(r.result)) as Record<string, unknown> | null),
      createdAt: Number(r.created_at),
      updatedAt: Number(r.updated_at),
    }));
  }

  async insertNodes(
    m: EntityManager,
    runId: string,
    rows: readonly Omit<NodeRow, 'createdAt' | 'updatedAt'>[],
    now: number,
  ): Promise<void> {
    for (let i = 0; i < rows.length; i += 500) {
      await m.insert(
        TopologyNodeEntity,
        rows.slice(i, i + 500).map((r) => ({
          run_id: runId,
          node_key: r.key,
          item: r.item,
          state: r.state,
          task_id: r.taskId,
          result: r.result,
          created_at: now,
          updated_at: now,
        })) as never,
      );
    }
  }

  /** Moves a node's row from one state to another; false when it was not in `from`. */
  async moveNode(
    m: EntityManager,
    runId: string,
    key: string,
    item: number,
    from: NodeRowState,
    to: Pick<NodeRow, 'state' | 'result'>,
    now: number,
  ): Promise<boolean> {
    const res = await m.update(
      TopologyNodeEntity,
      { run_id: runId, node_key: key, item, state: from },
      { state: to.state, result: to.result as never, updated_at: now },
    );
    return (res.affected ?? 0) > 0;
  }

  /** Drops node rows (a retry: the nodes are decided again). */
  async deleteNodes(
    m: EntityManager,
    runId: string,
    keys: readonly { key: string; item: number }[],
  ): Promise<void> {
    for (const k of keys)
      await m.delete(TopologyNodeEntity, { run_id: runId, node_key: k.key, item: k.item });
  }

  /**
   * Approval nodes waiting for a decision, in runs still going, oldest request first; only
   * `tenant`'s when given. Few rows wait at a time: those of one state, read whole.
   */
  async waitingApprovals(
    tenant: string | null,
    limit: number,
  ): Promise<
    {
      runId: string;
      name: string;
      version: number;
      tenant: string;
      node: string;
      result: Record<string, unknown>;
      requestedAt: number;
    }[]
  > {
    const rows = (await this.db.manager.query(
      `SELECT n.run_id, n.node_key, n.result, n.updated_at, r.name, r.version, r.tenant
         FROM baton_topology_node n JOIN baton_topology_run r ON r.run_id = n.run_id
        WHERE n.state = 'waiting' AND r.active = 1${tenant ? ' AND r.tenant = ?' : ''}
        ORDER BY n.updated_at, n.run_id`,
      tenant ? [tenant] : [],
    )) as Record<string, unknown>[];
    return rows
      .map((r) => ({
        runId: String(r.run_id),
        name: String(r.name),
        version: Number(r.version),
        tenant: String(r.tenant),
        node: String(r.node_key),
        result: JSON.parse(String(r.result)) as Record<string, unknown>,
        requestedAt: Number(r.updated_at),
      }))
      .filter((r) => r.result.approval === true)
      .slice(0, limit);
  }

  /** Keeps what a repair does, in its transaction: written in order, never edited. */
  async recordRepair(
    m: EntityManager,
    runId: string,
    records: readonly RepairRecord[],
  ): Promise<void> {
    for (let i = 0; i < records.length; i += 200)
      await m.insert(
        TopologyHistoryEntity,
        records.slice(i, i + 200).map((r) => ({
          entry_id: r.entryId,
          run_id: runId,
          at: r.at,
          action: r.action,
          node_key: r.key,
          item: r.item,
          actor: r.actor,
          detail: r.row
            ? {
                state: r.row.state,
                task_id: r.row.taskId,
                result: r.row.result,
                created_at: r.row.createdAt,
                updated_at: r.row.updatedAt,
              }
            : null,
        })) as never,
      );
  }

  /** The repairs of a run and the rows they replaced, oldest first. */
  async repairs(runId: string): Promise<RepairRecord[]> {
    const rows = await this.db.manager.find(TopologyHistoryEntity, {
      where: { run_id: runId },
      order: { entry_id: 'ASC' },
    });
    return rows.map((e) => {
      const d = e.detail;
      return {
        entryId: e.entry_id,
        at: e.at,
        action: e.action as RepairRecord['action'],
        key: e.node_key,
        item: e.item,
        actor: e.actor,
        row:
          d && e.node_key !== null
            ? {
                key: e.node_key,
                item: e.item ?? 0,
                state: d.state as NodeRowState,
                taskId: (d.task_id as string | null) ?? null,
                result: (d.result as Record<string, unknown> | null) ?? null,
                createdAt: Number(d.created_at),
                updatedAt: Number(d.updated_at),
              }
            : null,
      };
    });
  }

  async setWake(
    m: EntityManager,
    runId: string,
    wakeAt: number | null,
    now: number,
  ): Promise<void> {
    await m.update(TopologyRunEntity, { run_id: runId }, { wake_at: wakeAt, updated_at: now });
  }

  async setActive(runId: string, active: boolean, now: number): Promise<void> {
    await this.tx.single((m) =>
      m.update(
        TopologyRunEntity,
        { run_id: runId },
        { active: active ? 1 : 0, wake_at: null, updated_at: now },
      ),
    );
  }

  /** Active runs whose wait ends by `now`, or that nothing moved since `staleBefore`. */
  async due(now: number, staleBefore: number, limit: number): Promise<string[]> {
    const rows = await this.db.manager
      .createQueryBuilder(TopologyRunEntity, 'r')
      .select('r.run_id', 'run_id')
      .where('r.active = 1')
      .andWhere('(r.wake_at <= :now OR r.updated_at < :stale)', { now, stale: staleBefore })
      .orderBy('r.updated_at', 'ASC')
      .limit(limit)
      .getRawMany<{ run_id: string }>();
    return rows.map((r) => r.run_id);
  }

  /** Marks a run as looked at (the sweeper does not look again before `staleBefore` passes). */
  async touch(runId: string, now: number): Promise<void> {
    await this.tx.single((m) =>
      m.update(TopologyRunEntity, { run_id: runId }, { updated_at: now }),
    );
  }

  async getMany(runIds: readonly string[]): Promise<Map<string, TopologyRun>> {
    if (runIds.length === 0) return new Map();
    const rows = await this.db.manager.findBy(TopologyRunEntity, { run_id: In([...runIds]) });
    return new Map(rows.map((e) => [e.run_id, toRun(e)]));
  }
}
