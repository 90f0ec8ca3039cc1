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
  Max,
  MaxLength,
  Min,
} from 'class-validator';
import { TENANT_PATTERN } from '../../common';
import { MAX_DEADLINE_SECONDS } from '../node-kinds';
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
    ...FREE,
    description:
      'approval: waits for a person\'s decision (POST /v1/topology-runs/{run_id}/nodes/{node}/approve or /reject, with a comment): {timeout_seconds (required), on_timeout: "approve" | "reject" (required), message? (placeholders allowed), approvers?: {keys?: [API key names], roles?: ["operator" | "admin"]}}. Approvers absent: any operator or admin of the run\'s tenant. Approved: SUCCESS, its result {decision, by, at, comment}; rejected (or rejected by its timeout): FAILED',
  })
  approval?: Record<string, unknown>;

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
    type: 'integer',
    minimum: 1,
    maximum: MAX_DEADLINE_SECONDS,
    description:
      "how long a run may take, from its start (or the retry or re-run that reopened it): past it the graph's nodes under way are cancelled, none starts, and the run fails with reason deadline, then its handlers, rollback and finally nodes run. A run may set its own (POST /v1/topologies/{name}/runs). Absent: no deadline",
  })
  @IsOptional()
  deadline_seconds?: number;

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
  @ApiProperty({ nullable: true, type: 'integer', description: "a run's deadline (null: none)" })
  deadline_seconds!: number | null;
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
  deadline_seconds: v.spec.deadline_seconds ?? null,
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

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_DEADLINE_SECONDS,
    description: "this run's deadline, in place of the definition's",
  })
  @IsOptional()
  @IsInt({ message: 'deadline_seconds must be a whole number of seconds' })
  @Min(1)
  @Max(MAX_DEADLINE_SECONDS)
  deadline_seconds?: number;
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

/** Body of `POST /v1/topology-runs/{run_id}/nodes/{node}/approve` (and `/reject`). */
export class DecisionDto {
  @ApiPropertyOptional({
    maxLength: 1000,
    description: "why: kept with the decision, in the run's history and the audit log",
  })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  comment?: string;
}
