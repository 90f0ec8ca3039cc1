import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  Min,
} from 'class-validator';
import { TASK_OUTCOMES, TaskOutcome, TaskStatus } from '@baton/task-contract';
import { TENANT_PATTERN } from '../../common';
import { NODE_STATUSES } from '../node-state';
import { TOPOLOGY_NAME, TRIGGER_RULES } from '../topology-definition';
import { TopologyVersion } from '../topologies.repository';

const FREE = { type: 'object', additionalProperties: true } as const;

/** One node of a definition (checked when the definition is saved, see `nodes`). */
export class TopologyNodeDto {
  @ApiProperty({
    description: 'unique in the definition; letters, digits, "_", "-"',
    example: 'check',
  })
  key!: string;

  @ApiPropertyOptional({
    type: [String],
    description: 'the nodes that must end first',
    default: [],
  })
  depends_on?: string[];

  @ApiPropertyOptional({
    enum: TRIGGER_RULES,
    default: 'all_success',
    description:
      "when the node starts from how its parents ended, with Airflow's meanings (a parent FAILED, UPSTREAM_FAILED, CANCELLED or ROLLED_BACK counts as failed): all_success, all_failed, all_done, all_skipped, one_success, one_failed, one_done, none_failed, none_failed_min_one_success, none_skipped, always. A rule a failure makes impossible makes the node UPSTREAM_FAILED; one that can never be met otherwise, SKIPPED",
  })
  trigger_rule?: string;

  @ApiPropertyOptional({
    default: false,
    description:
      'its failure is reported on the run (optional_failed) but does not fail it; its dependants still see it failed. Not on on_failure or finally nodes',
  })
  optional?: boolean;

  @ApiPropertyOptional({
    oneOf: [
      { type: 'boolean' },
      {
        type: 'object',
        properties: { on_cancel: { type: 'boolean', default: true } },
        additionalProperties: false,
      },
    ],
    description:
      'a finally node (exit handler): runs once every other node has ended, whatever the outcome, and never changes it; {on_cancel: false} leaves it out of a cancelled run. May depend only on other finally nodes; reads {{run.outcome}}, {{run.error}}, {{run.failed_nodes}} and every node of the run',
  })
  finally?: boolean | { on_cancel?: boolean };

  @ApiPropertyOptional({
    ...FREE,
    description:
      'a task to create: the body of POST /v1/tasks (without tenant, idempotency_key, repetition, parent or control task), with placeholders such as {{input.cluster}}, {{nodes.check.result.primary}}, {{nodes.check.status}}, {{item}}, {{index}}, {{run.id}}',
  })
  task?: Record<string, unknown>;

  @ApiPropertyOptional({
    description: `dynamic fork: one task per element of the list this placeholder gives (at most 10,000); {{item}} and {{index}} in the task`,
    example: '{{nodes.list.result.hosts}}',
  })
  for_each?: string;

  @ApiPropertyOptional({
    description: 'a for_each node runs at most this many tasks at once',
    minimum: 1,
  })
  concurrency?: number;

  @ApiPropertyOptional({
    ...FREE,
    description:
      'switch: {value: placeholder, cases: {value: [node keys]}, default: [node keys]}. The nodes of the untaken cases are SKIPPED',
  })
  switch?: Record<string, unknown>;

  @ApiPropertyOptional({
    ...FREE,
    description:
      'sub-topology: {name, version?, input} runs another definition as a child run (5 deep at most)',
  })
  topology?: Record<string, unknown>;

  @ApiPropertyOptional({
    ...FREE,
    description:
      'wait: {signal: name} until POST /v1/topology-runs/{run_id}/signal, {until: ISO time or placeholder} or {seconds: n}',
  })
  wait?: Record<string, unknown>;

  @ApiPropertyOptional({
    default: false,
    description:
      'a failure handler: runs only when the run fails, before any rollback (may depend only on other on_failure nodes); reads {{run.error}}, {{run.failed_nodes}} and every node of the run',
  })
  on_failure?: boolean;
}

/** Body of `POST /v1/topologies`: a definition (a new version when it differs from the newest). */
export class TopologyDefinitionDto {
  @ApiProperty({ pattern: TOPOLOGY_NAME.source, example: 'failover' })
  @IsString()
  name!: string;

  @ApiPropertyOptional({ maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;

  @ApiPropertyOptional({
    default: false,
    description: 'when a run fails, roll back its succeeded nodes in reverse order',
  })
  @IsOptional()
  @IsBoolean()
  rollback_on_failure?: boolean;

  @ApiPropertyOptional({
    oneOf: [{ type: 'boolean' }, { type: 'string', enum: ['cancel'] }],
    default: false,
    description:
      'true: after the first failure no node starts any more but handlers and finally nodes (the others read CANCELLED); "cancel": the nodes under way are cancelled too',
  })
  @IsOptional()
  fail_fast?: boolean | 'cancel';

  @ApiPropertyOptional({
    pattern: TENANT_PATTERN.source,
    description: 'the tenant whose definition it is (none: every tenant may run it)',
  })
  @IsOptional()
  @Matches(TENANT_PATTERN, { message: 'tenant must be a lower-case name' })
  tenant?: string;

  @ApiProperty({
    type: [TopologyNodeDto],
    description:
      'the DAG, at most 1,000 nodes; checked at save (cycles, unknown keys and task types, bad placeholders): a 400 names the first node at fault in data.node, and data.errors lists every problem found ({node, message}, one per node at most)',
  })
  @IsArray()
  @ArrayMinSize(1)
  @IsObject({ each: true })
  nodes!: Record<string, unknown>[];
}

/** A stored version of a definition. */
export class TopologyDto {
  @ApiProperty() name!: string;
  @ApiProperty() version!: number;
  @ApiProperty({ nullable: true, type: String }) tenant!: string | null;
  @ApiProperty() description!: string;
  @ApiProperty() rollback_on_failure!: boolean;
  @ApiProperty({ oneOf: [{ type: 'boolean' }, { type: 'string', enum: ['cancel'] }] })
  fail_fast!: boolean | 'cancel';
  @ApiProperty({ type: [TopologyNodeDto] }) nodes!: TopologyNodeDto[];
  @ApiProperty() created_by!: string;
  @ApiProperty({ format: 'date-time' }) created_at!: string;
}

export const toTopologyDto = (v: TopologyVersion): TopologyDto => ({
  name: v.name,
  version: v.version,
  tenant: v.tenant,
  description: v.spec.description,
  rollback_on_failure: v.spec.rollback_on_failure,
  fail_fast: v.spec.fail_fast ?? false,
  nodes: v.spec.nodes,
  created_by: v.createdBy,
  created_at: new Date(v.createdAt).toISOString(),
});

/** The answer of `POST /v1/topologies/check`: the definition would be saved. */
export class TopologyCheckDto {
  @ApiProperty({
    description:
      'always true: a definition at fault answers 400 naming the first node at fault (data.node) and listing every problem (data.errors)',
  })
  valid!: boolean;

  @ApiProperty({ description: 'how many nodes it has' })
  nodes!: number;
}

/** Body of `POST /v1/topologies/{name}/runs`. */
export class StartRunDto {
  @ApiPropertyOptional({ ...FREE, description: 'what {{input.…}} placeholders read', default: {} })
  @IsOptional()
  @IsObject()
  input?: Record<string, unknown>;

  @ApiPropertyOptional({ description: 'a version of the definition (default: the newest)' })
  @IsOptional()
  @IsInt()
  @Min(1)
  version?: number;

  @ApiPropertyOptional({ pattern: TENANT_PATTERN.source, default: 'default' })
  @IsOptional()
  @Matches(TENANT_PATTERN, { message: 'tenant must be a lower-case name' })
  tenant?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' } })
  @IsOptional()
  @IsObject()
  labels?: Record<string, string>;
}

/** Body of `POST /v1/topology-runs/{run_id}/signal`. */
export class SignalDto {
  @ApiProperty({ description: 'the signal a wait node names', example: 'approved' })
  @IsString()
  @Matches(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, { message: 'signal must be a name' })
  signal!: string;

  @ApiPropertyOptional({ ...FREE, description: "the waiting nodes' result", default: {} })
  @IsOptional()
  @IsObject()
  data?: Record<string, unknown>;
}

/** One node of a run, as the console draws it. */
export class RunNodeDto {
  @ApiProperty() key!: string;
  @ApiProperty({ enum: ['task', 'switch', 'topology', 'wait'] }) kind!: string;
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
