import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { TASK_OUTCOMES, TaskOutcome, TaskStatus } from '@baton/task-contract';
import { NODE_STATUSES } from '../node-state';

const FREE = { type: 'object', additionalProperties: true } as const;

/** One node of a run, as the console draws it. */
export class RunNodeDto {
  @ApiProperty() key!: string;
  @ApiProperty({ enum: ['task', 'switch', 'topology', 'wait', 'approval'] }) kind!: string;
  @ApiProperty({ type: [String] }) depends_on!: string[];
  @ApiProperty({
    enum: NODE_STATUSES,
    description:
      'PENDING not decided; ACTIVE under way or waiting; SUCCESS; FAILED (its task failed, or it could not start); UPSTREAM_FAILED not run because a node it needs failed; CANCELLED stopped or never started because the run was cancelled or failed fast; SKIPPED an untaken branch, a rule that can never be met, or a person skipped it; ROLLED_BACK undone by the rollback',
  })
  status!: string;
  @ApiProperty({
    enum: ['main', 'handler', 'finally'],
    description: 'the run graph, an on_failure handler, or a finally node',
  })
  phase!: string;
  @ApiProperty({ description: 'its failure does not fail the run' }) optional!: boolean;
  @ApiProperty({
    nullable: true,
    type: String,
    description: 'its task (a child run for a topology node)',
  })
  task_id!: string | null;
  @ApiProperty({ nullable: true, enum: TaskStatus, type: String }) task_status!: string | null;
  @ApiProperty({ nullable: true, type: Number }) attempt!: number | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) started_at!: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) finished_at!: string | null;
  @ApiProperty({ nullable: true, type: 'object', additionalProperties: true })
  progress!: Record<string, unknown> | null;
  @ApiProperty({
    nullable: true,
    type: 'object',
    additionalProperties: true,
    description: "the task's result; a switch's choice; a wait's signal; a for_each node's counts",
  })
  result!: unknown;
  @ApiProperty({
    nullable: true,
    type: String,
    description: 'why it failed, was not run or was cancelled (what {{nodes.KEY.error}} reads)',
  })
  error!: string | null;
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'integer' },
    description: 'a for_each node: how many items, and how many are in each status',
  })
  items?: Record<string, number>;
}

/** A run: its centre task's status, and its graph. */
export class TopologyRunDto {
  @ApiProperty({ description: 'the id of the centre task (GET /v1/tasks/{run_id} reads it too)' })
  run_id!: string;
  @ApiProperty() name!: string;
  @ApiProperty() version!: number;
  @ApiProperty() tenant!: string;
  @ApiProperty({ enum: TaskStatus }) status!: TaskStatus;
  @ApiProperty({
    nullable: true,
    enum: TASK_OUTCOMES,
    enumName: 'TaskOutcome',
    description: 'once decided: SUCCESS, FAIL, ROLLBACK, or CANCELLED (the run was cancelled)',
  })
  outcome!: TaskOutcome | null;
  @ApiProperty() cancel_requested!: boolean;
  @ApiProperty({
    nullable: true,
    type: String,
    description: 'each node that failed by itself and why (at most five), or "cancelled"',
  })
  error!: string | null;
  @ApiProperty({
    nullable: true,
    enum: ['node_failed', 'deadline', 'cancelled', 'rolled_back'],
    type: String,
    description:
      "once finished without success, why: node_failed (nodes failed), deadline (the run's deadline passed and cut it short), cancelled (a person cancelled it), rolled_back (a child run undone with its parent's rollback)",
  })
  reason!: string | null;
  @ApiProperty({
    nullable: true,
    type: String,
    format: 'date-time',
    description:
      'when its deadline passes (from its start, or the retry or re-run that reopened it); null: none',
  })
  deadline_at!: string | null;
  @ApiProperty({
    type: [String],
    description:
      'once finished: the nodes that failed the run (FAILED, UPSTREAM_FAILED or CANCELLED, not optional)',
  })
  failed_nodes!: string[];
  @ApiProperty({
    type: [String],
    description: 'once finished: optional nodes that failed (they did not fail the run)',
  })
  optional_failed!: string[];
  @ApiProperty({
    type: [String],
    description: 'once finished: finally nodes that failed (they did not change the outcome)',
  })
  finally_failed!: string[];
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } })
  labels!: Record<string, string>;
  @ApiProperty(FREE) input!: Record<string, unknown>;
  @ApiProperty({ nullable: true, type: String }) parent_run_id!: string | null;
  @ApiProperty({ format: 'date-time' }) created_at!: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) started_at!: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) finished_at!: string | null;
  @ApiPropertyOptional({ type: [RunNodeDto], description: 'absent from lists' })
  nodes?: RunNodeDto[];
}

export class TopologyRunPageDto {
  @ApiProperty({ type: [TopologyRunDto] }) items!: TopologyRunDto[];
  @ApiProperty({ nullable: true, type: String }) next_cursor!: string | null;
}

/** One thing that happened in a run (`GET /v1/topology-runs/{id}/history`). */
export class RunHistoryEntryDto {
  @ApiProperty({
    enum: ['run', 'repair', 'execution', 'decision'],
    description:
      "run: the run's centre task moved (started, paused, reopened, finished); repair: a person retried the run, re-ran or skipped a node; execution: one attempt of a node's task (or a sub-topology's run); decision: a node decided without a task of its own running",
  })
  kind!: string;
  @ApiProperty({
    format: 'date-time',
    description: 'when it happened (an execution: when the attempt started)',
  })
  at!: string;
  @ApiProperty({ nullable: true, type: String }) node!: string | null;
  @ApiProperty({
    nullable: true,
    type: Number,
    description: 'the item of a for_each node (0 for other nodes)',
  })
  item!: number | null;
  @ApiProperty({ nullable: true, enum: ['main', 'handler', 'finally'], type: String })
  phase!: string | null;
  @ApiProperty({
    description:
      "run: the status it moved to; repair: retry, rerun or skip; execution: the attempt's outcome (RUNNING while it runs); decision: the node's status",
  })
  status!: string;
  @ApiProperty({ nullable: true, type: String }) task_id!: string | null;
  @ApiProperty({ nullable: true, type: Number }) attempt!: number | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) ended_at!: string | null;
  @ApiProperty({ nullable: true, type: String }) error!: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'why (a run move, a decision)' })
  reason!: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'who (a run move, a repair)' })
  actor!: string | null;
  @ApiProperty({
    description:
      'false once replaced: an attempt followed by another, a decision a repair undid; the current entries are what the run view shows',
  })
  current!: boolean;
}

export class RunHistoryDto {
  @ApiProperty() run_id!: string;
  @ApiProperty({ type: [RunHistoryEntryDto], description: 'oldest first' })
  entries!: RunHistoryEntryDto[];
}

/** Who may decide an approval: any of these API key names, any of these roles. */
export class ApproversDto {
  @ApiProperty({ type: [String] }) keys!: string[];
  @ApiProperty({ type: [String], enum: ['operator', 'admin'] }) roles!: string[];
}

/** An approval node waiting for a person's decision (`GET /v1/topology-approvals`). */
export class PendingApprovalDto {
  @ApiProperty() run_id!: string;
  @ApiProperty({ description: 'the definition' }) name!: string;
  @ApiProperty() version!: number;
  @ApiProperty() tenant!: string;
  @ApiProperty({ description: 'the approval node' }) node!: string;
  @ApiProperty({ nullable: true, type: String, description: 'what the approver is asked' })
  message!: string | null;
  @ApiProperty({ format: 'date-time' }) requested_at!: string;
  @ApiProperty({ format: 'date-time', description: 'when its timeout decides' })
  timeout_at!: string;
  @ApiProperty({ enum: ['approve', 'reject'], description: 'what the timeout decides' })
  on_timeout!: string;
  @ApiProperty({
    type: () => ApproversDto,
    description: 'who may decide (both empty: any operator or admin)',
  })
  approvers!: ApproversDto;
  @ApiProperty({ description: 'whether the calling key may decide it' }) may_decide!: boolean;
}

export class PendingApprovalPageDto {
  @ApiProperty({ type: [PendingApprovalDto], description: 'oldest request first' })
  items!: PendingApprovalDto[];
}
