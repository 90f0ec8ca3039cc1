import { Injectable } from '@nestjs/common';
import { CANCELLED_OUTCOME, RepetitionKind, TaskStatus } from '@baton/task-contract';
import { TaskAttemptModel, TaskLogRepository, TaskModel, TasksRepository } from '../task-store';
import { NodePhase, phaseOf } from './node-kinds';
import { NodeRow, NodeRowState, NodeStatus } from './node-state';
import { TopologyRunsRepository } from './topology-runs.repository';
import { TopologiesRepository } from './topologies.repository';
import { runNotFound } from './topology-runs.service';

/**
 * One thing that happened in a run:
 * - `run`: its centre task moved (started, paused, reopened by a retry, finished), with why and
 *   who;
 * - `repair`: a person retried the run, re-ran a node or skipped one;
 * - `execution`: one attempt of a node's task (or a sub-topology's run), with its times, outcome
 *   and error;
 * - `decision`: a node decided without a task of its own running (skipped, upstream-failed,
 *   cancelled, a switch's choice, a wait that ended, a node that could not start).
 */
export interface HistoryEntry {
  kind: 'run' | 'repair' | 'execution' | 'decision';
  at: number;
  node: string | null;
  item: number | null;
  phase: NodePhase | null;
  /**
   * run: the status the run moved to; repair: `retry`, `rerun` or `skip`; execution: the
   * attempt's outcome (RUNNING while it runs); decision: the node's status.
   */
  status: string;
  taskId: string | null;
  attempt: number | null;
  endedAt: number | null;
  error: string | null;
  reason: string | null;
  actor: string | null;
  /**
   * False once something later replaced it: an attempt followed by another, a decision a repair
   * undid. The entries with `current` true are what the run view shows.
   */
  current: boolean;
}

/** What a row without a task of its own says of its node. */
const DECISION: Partial<Record<NodeRowState, NodeStatus>> = {
  skipped: 'SKIPPED',
  switched: 'SUCCESS',
  waiting: 'ACTIVE',
  done: 'SUCCESS',
  failed: 'FAILED',
  upstream_failed: 'UPSTREAM_FAILED',
  cancelled: 'CANCELLED',
};

const text = (v: unknown): string | null =>
  typeof v === 'string' ? v : v === undefined || v === null ? null : JSON.stringify(v);

/** Entries of one instant in a readable order: the run, then repairs, decisions, executions. */
const ORDER: Record<HistoryEntry['kind'], number> = {
  run: 0,
  repair: 1,
  decision: 2,
  execution: 3,
};

/**
 * A run's history, put together from what is kept anyway: the centre task's lifecycle log, the
 * node rows (the present), the rows repairs replaced (kept by RunRepairs as they were) and the
 * attempts of every node task. A retry re-runs a node's own task, so its earlier attempts stay
 * in the task's attempts and nothing is overwritten.
 */
@Injectable()
export class TopologyHistory {
  constructor(
    private readonly defs: TopologiesRepository,
    private readonly runs: TopologyRunsRepository,
    private readonly tasks: TasksRepository,
    private readonly log: TaskLogRepository,
  ) {}

  async read(runId: string): Promise<HistoryEntry[]> {
    const run = await this.runs.get(runId);
    if (!run) throw runNotFound(runId);
    const [def, rows, repairs, events] = await Promise.all([
      this.defs.get(run.name, run.version),
      this.runs.nodes(runId),
      this.runs.repairs(runId),
      this.log.events(runId),
    ]);
    const phases = new Map((def?.spec.nodes ?? []).map((n) => [n.key, phaseOf(n)]));
    const replaced = repairs.flatMap((r) => (r.row ? [{ row: r.row, at: r.at }] : []));
    const all = [...rows.map((row) => ({ row, at: null })), ...replaced];
    const taskIds = [...new Set(all.map((x) => x.row.taskId).filter((x): x is string => !!x))];
    const [tasks, attempts] = await Promise.all([
      this.tasks.findByIds(taskIds),
      this.log.attemptsOf(taskIds),
    ]);
    const taskById = new Map(tasks.map((t) => [t.taskId, t]));
    const attemptsOf = new Map<string, TaskAttemptModel[]>();
    for (const a of attempts) attemptsOf.set(a.taskId, [...(attemptsOf.get(a.taskId) ?? []), a]);

    const out: HistoryEntry[] = [];
    const base = (row: NodeRow) => ({
      node: row.key,
      item: row.item,
      phase: phases.get(row.key) ?? null,
      actor: null,
    });
    for (const e of events)
      out.push({
        kind: 'run',
        at: e.at,
        node: null,
        item: null,
        phase: null,
        status: e.to,
        taskId: runId,
        attempt: e.attempt,
        endedAt: null,
        error: null,
        reason: e.reason,
        actor: e.actor,
        current: true,
      });
    for (const r of repairs)
      if (r.action !== 'superseded')
        out.push({
          kind: 'repair',
          at: r.at,
          node: r.key,
          item: null,
          phase: r.key ? (phases.get(r.key) ?? null) : null,
          status: r.action,
          taskId: null,
          attempt: null,
          endedAt: null,
          error: null,
          reason: null,
          actor: r.actor,
          current: true,
        });

    // A node task's attempts are told once, however many rows (present or replaced) name it.
    const told = new Set<string>();
    for (const { row, at } of all) {
      const current = at === null;
      const task = row.taskId ? taskById.get(row.taskId) : undefined;
      if (task && !told.has(task.taskId)) {
        told.add(task.taskId);
        // The present row shows the task's last attempt, unless the row waits to run it again
        // or was since decided otherwise (a handler not needed after a retry).
        const live = rows.some(
          (r) => r.taskId === task.taskId && (r.state === 'task' || r.state === 'rerun'),
        );
        out.push(...this.executions(task, attemptsOf.get(task.taskId) ?? [], live, base(row)));
      }
      // A row with a task is also a decision when it was decided not to run it again.
      const status = DECISION[row.state];
      if (!status) continue;
      const result = row.result ?? {};
      // An approval says who decided and why (or that it waits for someone).
      const approval =
        result.approval === true
          ? typeof result.decision === 'string'
            ? `${result.decision} by ${String(result.by)}${result.comment ? `: ${String(result.comment)}` : ''}`
            : row.state === 'waiting'
              ? 'waiting for a decision'
              : null
          : null;
      out.push({
        kind: 'decision',
        at: row.updatedAt,
        ...base(row),
        status,
        taskId: null,
        attempt: null,
        endedAt: null,
        error: text(result.error),
        reason:
          approval ?? text(result.reason) ?? (result.by === 'api' ? 'skipped by a person' : null),
        actor: text(result.actor) ?? (approval && result.by !== 'timeout' ? text(result.by) : null),
        current,
      });
    }
    return out
      .map((e, i) => ({ e, i }))
      .sort((a, b) => a.e.at - b.e.at || ORDER[a.e.kind] - ORDER[b.e.kind] || a.i - b.i)
      .map((x) => x.e);
  }

  private executions(
    task: TaskModel,
    attempts: readonly TaskAttemptModel[],
    live: boolean,
    where: Pick<HistoryEntry, 'node' | 'item' | 'phase' | 'actor'>,
  ): HistoryEntry[] {
    const entry = (
      at: number,
      status: string,
      attempt: number,
      endedAt: number | null,
      error: string | null,
      current: boolean,
    ): HistoryEntry => ({
      kind: 'execution',
      at,
      ...where,
      status,
      taskId: task.taskId,
      attempt,
      endedAt,
      error,
      reason: null,
      current,
    });
    // A sub-topology's run, or a task that never started (cancelled first): the task tells it.
    if (task.repetition === RepetitionKind.TOPOLOGY || attempts.length === 0)
      return [
        entry(
          task.startedAt ?? task.createdAt,
          task.outcome ??
            (task.status === TaskStatus.FINISH ? TaskStatus.FAIL : TaskStatus.RUNNING),
          task.attempt,
          task.finishedAt,
          task.error?.message ?? null,
          live,
        ),
      ];
    const last = attempts.length - 1;
    return attempts.map((a, k) =>
      entry(
        a.startedAt,
        // The attempt a cancel ended is recorded failed; the task says it was cancelled.
        k === last && a.outcome !== null && task.outcome === CANCELLED_OUTCOME
          ? CANCELLED_OUTCOME
          : (a.outcome ?? TaskStatus.RUNNING),
        a.attempt,
        a.endedAt,
        a.error,
        live && k === attempts.length - 1,
      ),
    );
  }
}
