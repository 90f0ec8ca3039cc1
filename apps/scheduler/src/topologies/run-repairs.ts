import { Injectable } from '@nestjs/common';
import {
  ContractErrorCode,
  ContractException,
  RepetitionKind,
  TaskStatus,
} from '@baton/task-contract';
import { EntityManager } from 'typeorm';
import { Clock, IdGenerator } from '../common';
import { TransactionRunner } from '../database';
import { TaskModel, TasksRepository } from '../task-store';
import { NodeRow, NodeStatus } from './node-state';
import { viewsOf } from './topology-evaluator';
import { TopologySpec, ancestorSets, forEachOf } from './topology-definition';
import { phaseOf } from './node-kinds';
import { NodeTaskReader } from './node-task-reader';
import { TopologyDriver } from './topology-driver';
import { TopologyRun, TopologyRunsRepository } from './topology-runs.repository';
import { TopologiesRepository } from './topologies.repository';
import { runNotFound } from './topology-runs.service';

/** Rows of nodes that did not run (no task): a retry decides them again. */
const NOT_RUN: ReadonlySet<NodeRow['state']> = new Set(['failed', 'upstream_failed', 'cancelled']);

/** A node that failing fast kept from starting (no task): decided again by a repair. */
const failFastLeftover = (r: NodeRow): boolean =>
  r.state === 'cancelled' && r.taskId === null && r.result?.reason === 'fail_fast';

/** What a person may skip: a node that has not run, or ended without doing its work. */
const SKIPPABLE: ReadonlySet<NodeStatus> = new Set([
  'PENDING',
  'FAILED',
  'UPSTREAM_FAILED',
  'CANCELLED',
]);

/**
 * Repairs of a run: retry from the failed nodes, re-run one node and everything after it, skip a
 * node. Succeeded nodes keep their results; a node that ran before runs its own task again (a
 * re-run: same task, a new attempt), so each node still has one task for good.
 */
@Injectable()
export class RunRepairs {
  constructor(
    private readonly defs: TopologiesRepository,
    private readonly runs: TopologyRunsRepository,
    private readonly tasks: TasksRepository,
    private readonly driver: TopologyDriver,
    private readonly nodeTasks: NodeTaskReader,
    private readonly tx: TransactionRunner,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
  ) {}

  /**
   * A failed (or cancelled) run, again from where it failed: failed nodes re-run their tasks,
   * nodes skipped because of them and the on-failure handlers are decided again, and a failed
   * sub-topology retries its own run the same way. The run is the same run, its graph intact.
   * What the retry resets or removes is kept in the run's history first.
   */
  async retry(runId: string, actor = 'api'): Promise<void> {
    const { spec, centre } = await this.load(runId);
    // Handlers and finally-nodes are decided again on every retry, whatever they did.
    const handlers = new Set(spec.nodes.filter((n) => phaseOf(n) !== 'main').map((n) => n.key));
    if (centre.status !== TaskStatus.FINISH || centre.outcome === TaskStatus.SUCCESS)
      throw this.illegal(centre, 'retry', 'only a run that finished without success is retried');
    const children: string[] = [];
    await this.tx.run(async (m) => {
      await this.runs.lock(m, runId);
      // Under the run's lock: a retry asked twice (or racing a re-run) finds the run reopened.
      const now = (await this.tasks.findByIds([runId], m))[0];
      if (!now || now.status !== TaskStatus.FINISH || now.outcome === TaskStatus.SUCCESS)
        throw this.illegal(
          now ?? centre,
          'retry',
          'only a run that finished without success is retried',
        );
      const rows = await this.runs.nodes(runId, m);
      const tasks = await this.taskMap(rows, m);
      const busy = rows.find((r) => {
        const t = r.taskId ? tasks.get(r.taskId) : undefined;
        return t !== undefined && (t.status !== TaskStatus.FINISH || t.pendingAction !== null);
      });
      if (busy)
        throw new ContractException(
          ContractErrorCode.ILLEGAL_TRANSITION,
          `node ${busy.key} of run ${runId} is still running: wait for it`,
          { run_id: runId, node: busy.key },
        );
      const wake: NodeRow[] = [];
      const drop: NodeRow[] = [];
      const resume: NodeRow[] = [];
      const undone: NodeRow[] = [];
      for (const r of rows) {
        const t = r.taskId ? tasks.get(r.taskId) : undefined;
        if (r.state === 'skipped' && r.result?.by === 'api') {
          // Skipped by a person: it stays skipped (a sub-topology too).
        } else if (t?.repetition === RepetitionKind.TOPOLOGY) {
          if (t.outcome !== TaskStatus.SUCCESS) {
            children.push(t.taskId);
            // Rolled back with this run before: a later failure rolls it back again.
            if (r.result?.rollback !== undefined) undone.push(r);
          }
        } else if (!t && (handlers.has(r.key) || NOT_RUN.has(r.state) || r.state === 'skipped'))
          // Decided again: a handler or finally-node of any kind, a node that did not run.
          drop.push(r);
        else if (r.state === 'forked' && r.result?.stopped !== undefined) resume.push(r);
        // A node with a task runs that task again (each node keeps one task for good).
        else if (t && (t.outcome !== TaskStatus.SUCCESS || r.state !== 'task')) wake.push(r);
        else if (t && handlers.has(r.key)) wake.push(r);
      }
      await this.keep(m, runId, 'retry', null, actor, [...drop, ...resume, ...wake, ...undone]);
      for (const r of undone)
        await this.runs.moveNode(
          m,
          runId,
          r.key,
          r.item,
          r.state,
          { state: r.state, result: { ...r.result, rollback: undefined } },
          this.clock.now(),
        );
      await this.runs.deleteNodes(m, runId, drop);
      // A fork that failing fast stopped starts the rest of its items again.
      for (const r of resume)
        await this.runs.moveNode(
          m,
          runId,
          r.key,
          r.item,
          'forked',
          { state: 'forked', result: { ...r.result, stopped: undefined } },
          this.clock.now(),
        );
      for (const r of wake)
        await this.runs.moveNode(
          m,
          runId,
          r.key,
          r.item,
          r.state,
          { state: 'dormant', result: null },
          this.clock.now(),
        );
    });
    for (const child of children) await this.retry(child, actor);
    await this.reopen(runId, 'retry from the failed nodes', actor);
  }

  /** Re-runs one node and every node after it; the nodes before it keep what they did. */
  async rerunNode(runId: string, key: string, actor = 'api'): Promise<void> {
    const { run, spec } = await this.load(runId);
    const node = spec.nodes.find((n) => n.key === key);
    if (!node) throw this.noNode(runId, key);
    const byKey = new Map(spec.nodes.map((n) => [n.key, n]));
    const ancestors = ancestorSets(spec.nodes, byKey);
    // The node, what follows it, and the handlers and finally-nodes (decided after the graph).
    const downstream = new Set(
      spec.nodes
        .filter((n) => n.key === key || ancestors.get(n.key)?.has(key) || phaseOf(n) !== 'main')
        .map((n) => n.key),
    );
    if (spec.nodes.some((n) => downstream.has(n.key) && 'topology' in n))
      throw new ContractException(
        ContractErrorCode.ILLEGAL_TRANSITION,
        `node ${key} has a sub-topology node after it: re-run the run's failed nodes (retry) instead`,
        { run_id: runId, node: key },
      );
    await this.tx.run(async (m) => {
      await this.runs.lock(m, runId);
      const all = await this.runs.nodes(runId, m);
      // What failing fast left unstarted elsewhere in the graph starts again too.
      const rows = all.filter((r) => downstream.has(r.key) || failFastLeftover(r));
      const tasks = await this.taskMap(rows, m);
      const busy = rows.find((r) => r.taskId && tasks.get(r.taskId)?.status !== TaskStatus.FINISH);
      if (busy)
        throw new ContractException(
          ContractErrorCode.ILLEGAL_TRANSITION,
          `node ${busy.key} of run ${runId} is running: wait for it, or cancel the run first`,
          { run_id: runId, node: busy.key },
        );
      await this.keep(m, runId, 'rerun', key, actor, rows);
      await this.runs.deleteNodes(
        m,
        runId,
        rows.filter((r) => !r.taskId),
      );
      for (const r of rows.filter((x) => x.taskId))
        await this.runs.moveNode(
          m,
          runId,
          r.key,
          r.item,
          r.state,
          { state: 'dormant', result: null },
          this.clock.now(),
        );
    });
    // Reopens the run if it finished meanwhile; else it only evaluates.
    await this.reopen(run.runId, `re-run from node ${key}`, actor);
  }

  /**
   * Skips a node that has not succeeded and is not running: it is SKIPPED, and its dependants go
   * on as if it had succeeded. A finished run is not reopened by it (retry does that).
   */
  async skip(runId: string, key: string, actor = 'api'): Promise<void> {
    const { spec, centre } = await this.load(runId);
    const node = spec.nodes.find((n) => n.key === key);
    if (!node) throw this.noNode(runId, key);
    if (forEachOf(node) !== undefined)
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `node ${key} is a for_each node: skip is for single nodes`,
        { node: key },
      );
    const now = this.clock.now();
    await this.tx.run(async (m) => {
      await this.runs.lock(m, runId);
      const rows = await this.runs.nodes(runId, m);
      const status = viewsOf(spec, rows, await this.nodeTasks.read(rows, m)).get(key)?.status;
      if (!SKIPPABLE.has(status as NodeStatus))
        throw new ContractException(
          ContractErrorCode.ILLEGAL_TRANSITION,
          `node ${key} of run ${runId} is ${status}: only a pending, failed, upstream-failed or cancelled node is skipped`,
          { run_id: runId, node: key, status },
        );
      const row = rows.find((r) => r.key === key && r.item === 0);
      const skipped = { state: 'skipped' as const, result: { by: 'api', actor } };
      const byKey = new Map(spec.nodes.map((n) => [n.key, n]));
      const ancestors = ancestorSets(spec.nodes, byKey);
      // The nodes after it that its failure skipped are decided again, now that it counts as done.
      const redecided = rows.filter(
        (r) =>
          ancestors.get(r.key)?.has(key) &&
          (r.state === 'skipped' || r.state === 'upstream_failed') &&
          r.taskId === null &&
          r.result?.by !== 'api',
      );
      const leftovers = rows.filter(failFastLeftover);
      await this.keep(m, runId, 'skip', key, actor, [
        ...(row ? [row] : []),
        ...leftovers,
        ...redecided,
      ]);
      if (row) await this.runs.moveNode(m, runId, key, 0, row.state, skipped, now);
      else await this.runs.insertNodes(m, runId, [{ key, item: 0, taskId: null, ...skipped }], now);
      // What failing fast left unstarted starts once the failure is skipped.
      await this.runs.deleteNodes(m, runId, leftovers);
      await this.runs.deleteNodes(m, runId, redecided);
    });
    if (centre.status !== TaskStatus.FINISH) await this.driver.evaluate(runId);
  }

  /** A finished run's centre task back to RUNNING (FINISH -> CREATE -> RUNNING), evaluated. */
  private async reopen(runId: string, why: string, actor: string): Promise<void> {
    for (;;) {
      const centre = await this.tasks.findById(runId);
      if (!centre || centre.status !== TaskStatus.FINISH) break;
      const now = this.clock.now();
      // The whole deadline again, before the move: the move's change has the run evaluated at
      // once (and after a crash), which must not find the old deadline passed.
      await this.runs.restartDeadline(runId, now);
      const moved = await this.tasks.apply(
        centre,
        {
          to: TaskStatus.RUNNING,
          via: [TaskStatus.CREATE],
          patch: {
            attempt: centre.attempt + 1,
            outcome: null,
            error: null,
            result: null,
            cancelRequested: false,
            finishedAt: null,
          },
          reason: why,
          actor,
        },
        now,
      );
      // A crash before this leaves the run inactive: the move's change (durable with it) has
      // the driver evaluate the run, which marks it active again.
      if (moved) {
        await this.runs.setActive(runId, true, now);
        break;
      }
    }
    await this.driver.evaluate(runId);
  }

  /** The repair and the rows it is about to reset or remove, as they were, in its transaction. */
  private async keep(
    m: EntityManager,
    runId: string,
    action: 'retry' | 'rerun' | 'skip',
    key: string | null,
    actor: string,
    changed: readonly NodeRow[],
  ): Promise<void> {
    const at = this.clock.now();
    // A dormant row holds no decision yet: nothing of it to keep.
    const decided = changed.filter((r) => r.state !== 'dormant');
    await this.runs.recordRepair(m, runId, [
      { entryId: this.ids.taskId(), at, action, key, item: null, actor, row: null },
      ...decided.map((r) => ({
        entryId: this.ids.taskId(),
        at,
        action: 'superseded' as const,
        key: r.key,
        item: r.item,
        actor: null,
        row: r,
      })),
    ]);
  }

  private async load(
    runId: string,
  ): Promise<{ run: TopologyRun; spec: TopologySpec; centre: TaskModel }> {
    const [run, centre] = await Promise.all([this.runs.get(runId), this.tasks.findById(runId)]);
    if (!run || !centre) throw runNotFound(runId);
    const def = await this.defs.get(run.name, run.version);
    if (!def) throw runNotFound(runId);
    return { run, spec: def.spec, centre };
  }

  private async taskMap(
    rows: readonly NodeRow[],
    m: EntityManager,
  ): Promise<Map<string, TaskModel>> {
    const ids = rows.map((r) => r.taskId).filter((x): x is string => x !== null);
    return new Map((await this.tasks.findByIds(ids, m)).map((t) => [t.taskId, t]));
  }

  private noNode(runId: string, key: string): ContractException {
    return new ContractException(ContractErrorCode.NOT_FOUND, `run ${runId} has no node ${key}`, {
      run_id: runId,
      node: key,
    });
  }

  private illegal(centre: TaskModel, action: string, why: string): ContractException {
    return new ContractException(
      ContractErrorCode.ILLEGAL_TRANSITION,
      `cannot ${action} topology run ${centre.taskId}: it is ${centre.status}${centre.outcome ? ` (${centre.outcome})` : ''}; ${why}`,
      { run_id: centre.taskId, status: centre.status },
    );
  }
}
