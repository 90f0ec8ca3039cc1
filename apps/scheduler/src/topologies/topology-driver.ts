import { Injectable, Logger } from '@nestjs/common';
import {
  ContractErrorCode,
  ContractException,
  RepetitionKind,
  TaskStatus,
} from '@baton/task-contract';
import { Clock } from '../common';
import { TransactionRunner } from '../database';
import {
  NewTaskStatusChange,
  TaskChangeConsumer,
  TaskModel,
  TaskStatusChange,
  TasksRepository,
} from '../task-store';
import { TaskActionsService, TasksService } from '../tasks';
import { NodeRow, sameRows } from './node-state';
import { NodeTaskReader } from './node-task-reader';
import { TOPOLOGY_ACTOR, finishRun } from './run-finish';
import { ApprovalRequests, approvalsAsked } from './approval-requests';
import { createBodyOf } from './node-body';
import { MAX_DEPTH } from './topology-definition';
import { NodeStart, Plan, evaluate } from './topology-evaluator';
import { TopologyRun, TopologyRunsRepository, deadlineOf } from './topology-runs.repository';
import { TopologiesRepository } from './topologies.repository';

export { TOPOLOGY_ACTOR };
/** Runs evaluated at once by one relay batch. */
const PARALLEL_RUNS = 8;

/** A start made ready outside the transaction: its task (and child run), or why it cannot start. */
type Built = { task: TaskModel; run?: TopologyRun } | { problem: string };

/** How long a node task being driven is asked again to cancel. */
const CANCEL_WITHIN_MS = 10_000;

/**
 * Drives topology runs. It is a consumer of the task store's durable change feed: a node task's
 * move to FINISH, and a centre task's creation or return to RUNNING, are written to the outbox in
 * the transaction of the move, and handed here until an evaluation of the run returned. An
 * evaluation reads the run's node rows and tasks with the run's row held, decides (the pure
 * `evaluate`), and writes each new node's row with its task in one transaction: a node is keyed
 * (run, node, item), so an evaluation repeated after a crash creates nothing twice.
 */
@Injectable()
export class TopologyDriver implements TaskChangeConsumer {
  readonly name = 'topologies';
  private readonly logger = new Logger('TopologyDriver');

  constructor(
    private readonly defs: TopologiesRepository,
    private readonly runs: TopologyRunsRepository,
    private readonly tasks: TasksRepository,
    private readonly nodeTasks: NodeTaskReader,
    private readonly creator: TasksService,
    private readonly actions: TaskActionsService,
    private readonly tx: TransactionRunner,
    private readonly clock: Clock,
    private readonly approvals: ApprovalRequests,
  ) {}

  wants(c: NewTaskStatusChange): boolean {
    if (c.task.repetition === RepetitionKind.TOPOLOGY && c.to !== TaskStatus.FINISH)
      // Started, reopened, or being rolled back with its parent: the change is durable with
      // the move, so a crash right after it still has the run evaluated (and marked active).
      return c.from === null || c.to === TaskStatus.RUNNING || c.to === TaskStatus.ROLLBACK;
    return c.task.controlTaskId !== null && c.to === TaskStatus.FINISH;
  }

  async handle(changes: readonly TaskStatusChange[]): Promise<void> {
    const runIds = new Set<string>();
    const ended = changes.filter((c) => c.to === TaskStatus.FINISH).map((c) => c.taskId);
    for (const t of await this.tasks.columnsOf(ended, ['control_task_id']))
      if (t.control_task_id) runIds.add(String(t.control_task_id));
    for (const c of changes) if (c.to !== TaskStatus.FINISH) runIds.add(c.taskId);
    const queue = [...runIds];
    await Promise.all(
      Array.from({ length: Math.min(PARALLEL_RUNS, queue.length) }, async () => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift()) await this.evaluate(id);
      }),
    );
  }

  /** Moves a run on as far as its state allows now (idempotent; any instance may call it). */
  async evaluate(runId: string): Promise<void> {
    for (let round = 0; round < 10; round++) if (!(await this.evaluateOnce(runId))) return;
  }

  /** One evaluation; true when starts were found that were not made ready (look again). */
  private async evaluateOnce(runId: string): Promise<boolean> {
    const run = await this.runs.get(runId);
    if (!run) return false;
    let centre = await this.tasks.findById(runId);
    if (!centre) return false;
    const now = this.clock.now();
    if (centre.status === TaskStatus.FINISH) {
      if (run.active) await this.runs.setActive(runId, false, now);
      return false;
    }
    // Reopened (a retry, a re-run) by a request that died before it marked the run active.
    if (!run.active) await this.runs.setActive(runId, true, now);
    const spec = (await this.defs.get(run.name, run.version))?.spec;
    if (!spec) throw new Error(`run ${runId}: definition ${run.name} v${run.version} is gone`);
    if (centre.status === TaskStatus.INIT) {
      centre = await this.tasks.apply(
        centre,
        {
          to: TaskStatus.RUNNING,
          via: [TaskStatus.CREATE],
          patch: { startedAt: now },
          reason: 'topology run started',
          actor: TOPOLOGY_ACTOR,
        },
        now,
      );
      return centre !== undefined; // lost a race: look again
    }
    const firstRows = await this.runs.nodes(runId);
    const seen = await this.nodeTasks.read(firstRows);
    const first = evaluate(spec, this.context(run, centre), firstRows, seen);
    const built = await this.build(run, first.starts);
    let again = false;
    let plan: Plan | undefined;
    let created: TaskModel[] = [];
    await this.tx.run(async (m) => {
      again = false;
      created = [];
      await this.runs.lock(m, runId);
      const current = (await this.tasks.findByIds([runId], m))[0];
      if (!current || current.status === TaskStatus.FINISH) return;
      // The rows again, under the run's lock; the node tasks as read above, but for those made
      // since. A task that moved since that read is at worst seen a step behind: the move's own
      // change evaluates the run again once it committed.
      const rows = await this.runs.nodes(runId, m);
      const nodeTasks = await this.nodeTasks.read(rows, m, seen);
      // Nothing of the run moved since the first look: its plan stands (an evaluation walks
      // every node, a thousand in a fan-out of a thousand).
      const unmoved = current.version === centre.version && sameRows(rows, firstRows);
      plan = unmoved ? first : evaluate(spec, this.context(run, current), rows, nodeTasks);
      const taskRows: Omit<NodeRow, 'createdAt' | 'updatedAt'>[] = [];
      const childRuns: TopologyRun[] = [];
      for (const s of plan.starts) {
        const b = built.get(`${s.key}:${s.item}`);
        if (!b) {
          again = true;
          continue;
        }
        if ('problem' in b) {
          taskRows.push({ ...s, state: 'failed', taskId: null, result: { error: b.problem } });
          continue;
        }
        created.push(b.task);
        if (b.run) childRuns.push(b.run);
        taskRows.push({ ...s, state: 'task', taskId: b.task.taskId, result: null });
      }
      const fresh = plan.rows.filter((r) => r.from === undefined && r.state !== 'done');
      // Approvals that begin to wait are told in this transaction (a webhook): once, as the row.
      await this.approvals.tell(m, approvalsAsked(fresh, run, current, now));
      await this.runs.insertNodes(
        m,
        runId,
        [...fresh.map((r) => ({ ...r, taskId: null })), ...taskRows],
        now,
      );
      for (const r of plan.rows.filter((x) => x.from !== undefined || x.state === 'done'))
        await this.runs.moveNode(m, runId, r.key, r.item, r.from ?? 'waiting', r, now);
      for (const r of plan.reruns)
        await this.runs.moveNode(
          m,
          runId,
          r.key,
          r.item,
          'dormant',
          { state: 'rerun', result: { from: r.from, ...(r.params ? { params: r.params } : {}) } },
          now,
        );
      if (created.length > 0) await this.creator.insertWithin(m, created, TOPOLOGY_ACTOR);
      for (const r of childRuns) await this.runs.insertRun(m, r, now);
      await this.runs.setWake(m, runId, plan.wakeAt ?? null, now);
    });
    if (created.length > 0) await this.creator.committed(created);
    if (!plan) return false;
    const decided: Plan = plan;
    // Only from the attempt the row names: a re-run asked for twice (two evaluations, two
    // instances) makes one new attempt, never a third after the second has run.
    for (const r of [...decided.reruns, ...decided.kicks])
      // Params the run rendered go to the worker unchecked by the schema (its create checks them):
      // a refusal here would be asked again by every evaluation, the node never failing.
      await this.actions
        .rerun(r.taskId, r.params, TOPOLOGY_ACTOR, r.from, false)
        .catch((err: unknown) => {
          // Asked again by the next evaluation (the row says the re-run has not begun).
          this.logger.warn(`run ${runId}: re-run of node task ${r.taskId} failed: ${String(err)}`);
        });
    for (const r of decided.rollbacks) await this.rollBack(runId, r.row, r.taskId);
    await Promise.all(
      decided.cancel.map((id) =>
        this.cancelNode(id).catch((err: unknown) => {
          this.logger.warn(`run ${runId}: cancel of node task ${id} failed: ${String(err)}`);
        }),
      ),
    );
    if (decided.finish && !again)
      await finishRun(this.tasks, this.runs, run, decided.finish, this.clock.now());
    return again;
  }

  /**
   * A node's task through the contract, asked again while it is being driven (a task just
   * created or moving answers 409 for a moment: nothing would ask again until the node ends);
   * a sub-topology node's child run as a run.
   */
  private async cancelNode(taskId: string): Promise<void> {
    const t = await this.tasks.findById(taskId);
    if (t?.repetition === RepetitionKind.TOPOLOGY) await this.cancelRun(taskId, TOPOLOGY_ACTOR);
    else await this.actions.cancelWhenFree(taskId, TOPOLOGY_ACTOR, CANCEL_WITHIN_MS);
  }

  /**
   * Stops a run: no node starts any more, and its running nodes (child runs too) are cancelled.
   * False when it had finished already.
   */
  async cancelRun(runId: string, actor: string): Promise<boolean> {
    for (;;) {
      const centre = await this.tasks.findById(runId);
      if (!centre || centre.status === TaskStatus.FINISH) return false;
      if (centre.cancelRequested) break;
      const moved = await this.tasks.apply(
        centre,
        {
          patch: { cancelRequested: true },
          note: true,
          reason: 'cancel requested: no node starts any more, running nodes are cancelled',
          actor,
        },
        this.clock.now(),
      );
      if (moved) break;
    }
    await this.evaluate(runId);
    return true;
  }

  /**
   * Asks for the rollback of a succeeded node task (a saga), then notes on its row that it was
   * asked (or why it cannot be: its type has no rollback), so it is asked once.
   */
  private async rollBack(runId: string, row: NodeRow, taskId: string): Promise<void> {
    let note = 'requested';
    try {
      const task = await this.tasks.findById(taskId);
      if (task?.repetition === RepetitionKind.TOPOLOGY) await this.rollBackRun(task);
      else await this.actions.rollback(taskId, TOPOLOGY_ACTOR);
    } catch (err) {
      const code = err instanceof ContractException ? err.code : undefined;
      if (code === ContractErrorCode.NOT_IMPLEMENTED) note = 'its type has no rollback';
      else if (code !== ContractErrorCode.ILLEGAL_TRANSITION) {
        this.logger.warn(`run ${runId}: rollback of node task ${taskId} failed: ${String(err)}`);
        return;
      }
    }
    await this.tx.run((m) =>
      this.runs.moveNode(
        m,
        runId,
        row.key,
        row.item,
        row.state,
        { state: row.state, result: { ...(row.result ?? {}), rollback: note } },
        this.clock.now(),
      ),
    );
  }

  /**
   * A child run that succeeded, undone as one node of its parent's rollback: its centre task
   * moves FINISH -> ROLLBACK, its own succeeded nodes are rolled back latest first (child runs of
   * its own the same way), then it ends FINISH with the outcome ROLLBACK.
   */
  private async rollBackRun(centre: TaskModel): Promise<void> {
    if (centre.status === TaskStatus.FINISH && centre.outcome === TaskStatus.SUCCESS) {
      const now = this.clock.now();
      const moved = await this.tasks.apply(
        centre,
        {
          to: TaskStatus.ROLLBACK,
          patch: { finishedAt: null },
          reason: 'rolled back with its parent run',
          actor: TOPOLOGY_ACTOR,
        },
        now,
      );
      if (!moved) throw new Error(`run ${centre.taskId} moved meanwhile`);
      await this.runs.setActive(centre.taskId, true, now);
    }
    await this.evaluate(centre.taskId);
  }

  private context(run: TopologyRun, centre: TaskModel): Parameters<typeof evaluate>[1] {
    return {
      runId: run.runId,
      name: run.name,
      version: run.version,
      input: run.input,
      paused: centre.status === TaskStatus.PAUSE,
      cancelling: centre.cancelRequested,
      rollingBack: centre.status === TaskStatus.ROLLBACK,
      deadlineAt: run.deadlineAt,
      now: this.clock.now(),
    };
  }

  /** The tasks (and child runs) of the starts, checked, built outside the transaction. */
  private async build(run: TopologyRun, starts: readonly NodeStart[]): Promise<Map<string, Built>> {
    const out = new Map<string, Built>();
    for (const s of starts) {
      try {
        out.set(`${s.key}:${s.item}`, await this.buildOne(run, s));
      } catch (err) {
        out.set(`${s.key}:${s.item}`, {
          problem: err instanceof Error ? err.message : String(err),
        });
      }
    }
    return out;
  }

  private async buildOne(run: TopologyRun, s: NodeStart): Promise<Built> {
    if (s.kind === 'topology') {
      const sub = s.body as { name: string; version?: number; input: Record<string, unknown> };
      if (run.depth + 1 > MAX_DEPTH)
        return { problem: `sub-topologies nest at most ${MAX_DEPTH} deep` };
      const def = await this.defs.get(sub.name, sub.version);
      if (!def || (def.tenant !== null && def.tenant !== run.tenant))
        return { problem: `topology ${sub.name} v${sub.version ?? 'latest'} is not defined` };
      const task = this.creator.centre({
        name: def.name,
        version: def.version,
        tenant: run.tenant,
        input: sub.input,
        labels: {},
        idempotencyKey: null,
        parentTaskId: run.runId,
        controlTaskId: run.runId,
      });
      return {
        task,
        run: {
          runId: task.taskId,
          name: def.name,
          version: def.version,
          tenant: run.tenant,
          input: sub.input,
          depth: run.depth + 1,
          parentRunId: run.runId,
          active: true,
          wakeAt: null,
          ...deadlineOf(def.spec.deadline_seconds, task.createdAt),
          createdAt: task.createdAt,
        },
      };
    }
    const body = await createBodyOf(s.body);
    if ('problem' in body) return body;
    const task = await this.creator.build(body.dto, {
      tenant: run.tenant,
      parentTaskId: run.runId,
      controlTaskId: run.runId,
    });
    return { task };
  }
}
