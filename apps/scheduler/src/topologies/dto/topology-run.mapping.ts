import { ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { IsOptional, Matches } from 'class-validator';
import { TaskListFilterQuery } from '../../tasks';
import { NodeView } from '../node-state';
import { NodeDef, TOPOLOGY_NAME, kindOf } from '../topology-definition';
import { phaseOf } from '../node-kinds';
import { nodeError } from '../topology-evaluator';
import { RunState } from '../topology-runs.service';
import { HistoryEntry } from '../topology-history';
import { RunHistoryEntryDto, RunNodeDto, TopologyRunDto } from './topology-run.dto';

const iso = (ms: number | null | undefined): string | null =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();

/** Query string of `GET /v1/topology-runs`. */
export class ListRunsQuery extends OmitType(TaskListFilterQuery, ['task_type'] as const) {
  @ApiPropertyOptional({ description: 'next_cursor of the previous page' })
  @IsOptional()
  @Matches(/^[0-9A-Z]{26}$/, { message: 'cursor is not one this API gave out' })
  cursor?: string;

  @ApiPropertyOptional({ description: 'runs of this definition', pattern: TOPOLOGY_NAME.source })
  @IsOptional()
  @Matches(TOPOLOGY_NAME, { message: 'name must be a topology name' })
  name?: string;
}

/** A list of node keys the finished run's result keeps (none before it finished). */
function listOf(result: Record<string, unknown> | null, field: string): string[] {
  const v = result?.[field];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/**
 * When a for_each node began and ended: its first item's start to its last item's end (its own
 * row is written when it ends, so its times alone would show it taking nothing).
 */
function itemsSpan(v: NodeView): { started: number | null; finished: number | null } {
  let started: number | null = null;
  let finished: number | null = null;
  for (const i of v.items) {
    const from = i.task?.startedAt ?? i.row.createdAt;
    const to = i.task?.finishedAt ?? (i.status !== 'ACTIVE' ? i.row.updatedAt : null);
    if (from !== null && from !== undefined) started = Math.min(started ?? from, from);
    if (to !== null && to !== undefined) finished = Math.max(finished ?? to, to);
  }
  return { started, finished: v.status === 'ACTIVE' ? null : finished };
}

function nodeDto(def: NodeDef, v: NodeView): RunNodeDto {
  const t = v.task;
  const span = v.count !== undefined && v.items.length > 0 ? itemsSpan(v) : undefined;
  const dto: RunNodeDto = {
    key: def.key,
    kind: kindOf(def),
    depends_on: def.depends_on,
    status: v.status,
    phase: phaseOf(def),
    optional: def.optional === true,
    task_id: t?.taskId ?? null,
    task_status: t?.status ?? null,
    attempt: t?.attempt ?? null,
    started_at: iso(span ? span.started : (t?.startedAt ?? (v.row && !t ? v.row.createdAt : null))),
    finished_at: iso(
      span
        ? span.finished
        : (t?.finishedAt ?? (v.row && !t && v.status !== 'ACTIVE' ? v.row.updatedAt : null)),
    ),
    progress: t?.progress ?? null,
    result: v.result,
    // An active node's task may carry the error of an attempt that is being retried.
    error: nodeError(v) ?? (v.status === 'ACTIVE' ? (t?.error?.message ?? null) : null),
  };
  if (v.count !== undefined) {
    const items: Record<string, number> = { total: v.count };
    for (const i of v.items) items[i.status] = (items[i.status] ?? 0) + 1;
    dto.items = items;
    const r = v.result as { results?: unknown } | null;
    if (r && typeof r === 'object') dto.result = { ...r, results: undefined };
  }
  return dto;
}

export function toRunDto(s: RunState): TopologyRunDto {
  const c = s.centre;
  const dto: TopologyRunDto = {
    run_id: s.run.runId,
    name: s.run.name,
    version: s.run.version,
    tenant: s.run.tenant,
    status: c.status,
    outcome: c.outcome,
    cancel_requested: c.cancelRequested,
    error: c.error?.message ?? null,
    reason:
      c.status !== 'FINISH' || c.outcome === 'SUCCESS'
        ? null
        : c.outcome === 'ROLLBACK'
          ? 'rolled_back'
          : (c.error?.code ?? null),
    deadline_at: iso(s.run.deadlineAt),
    failed_nodes: listOf(c.result, 'failed_nodes'),
    optional_failed: listOf(c.result, 'optional_failed'),
    finally_failed: listOf(c.result, 'finally_failed'),
    labels: c.labels,
    input: s.run.input,
    parent_run_id: s.run.parentRunId,
    created_at: new Date(s.run.createdAt).toISOString(),
    started_at: iso(c.startedAt),
    finished_at: iso(c.finishedAt),
  };
  if (s.nodes && s.spec) {
    const byKey = new Map(s.nodes.map((v) => [v.key, v]));
    dto.nodes = s.spec.nodes.map((d) => nodeDto(d, byKey.get(d.key) as NodeView));
  }
  return dto;
}

export const toHistoryDto = (e: HistoryEntry): RunHistoryEntryDto => ({
  kind: e.kind,
  at: new Date(e.at).toISOString(),
  node: e.node,
  item: e.item,
  phase: e.phase,
  status: e.status,
  task_id: e.taskId,
  attempt: e.attempt,
  ended_at: iso(e.endedAt),
  error: e.error,
  reason: e.reason,
  actor: e.actor,
  current: e.current,
});
