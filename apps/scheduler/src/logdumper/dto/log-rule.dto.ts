import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  ValidateNested,
} from 'class-validator';
import { TENANT_PATTERN } from '../../common';
import { LogRuleModel } from '../log-rule.model';
import { MAX_LINE_CHARS } from '../log-record';
import type { LogRuleTest } from '../log-rules.service';

const SOURCES_DOC =
  'source patterns the rule applies to: `http:<name>`, `file:<name>`, `stream:<name>`, with `*` for any name (`file:*`), or `*` for every source';
const MATCH_DOC =
  '`{"regex": "...", "flags": "i"}` (named groups become placeholders) or `{"json": {"field.path": {"equals": value} | {"exists": true}}}` (every condition must hold)';
const TEMPLATE_DOC =
  'a create-task body (POST /v1/tasks) without idempotency_key; string values may hold `{{name}}` placeholders: a regex group, a JSON field path, or `_line`, `_source`, `_position`';

/** Body of `POST /v1/log-rules`. */
export class CreateLogRuleDto {
  @ApiProperty({ minLength: 1, maxLength: 100 })
  @IsString()
  @Length(1, 100)
  name!: string;

  @ApiPropertyOptional({ type: [String], default: ['*'], description: SOURCES_DOC })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(20)
  @IsString({ each: true })
  sources?: string[];

  @ApiProperty({ type: 'object', additionalProperties: true, description: MATCH_DOC })
  @IsObject()
  match!: Record<string, unknown>;

  @ApiProperty({ type: 'object', additionalProperties: true, description: TEMPLATE_DOC })
  @IsObject()
  template!: Record<string, unknown>;

  @ApiPropertyOptional({ default: true })
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({
    pattern: TENANT_PATTERN.source,
    description:
      'the rule reads only the logs ingested for this tenant (POST /v1/logs with its tenant, or by its keys) and makes tasks there; without it, every log (admins). A key of one tenant: always its own. It cannot change later',
  })
  @IsOptional()
  @Matches(TENANT_PATTERN, { message: 'tenant must be a lower-case name' })
  tenant?: string;
}

/** Body of `PATCH /v1/log-rules/{rule_id}`: any field of the rule; `enabled` switches it. */
export class UpdateLogRuleDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 100 })
  @IsOptional()
  @IsString()
  @Length(1, 100)
  name?: string;

  @ApiPropertyOptional({ type: [String], description: SOURCES_DOC })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(20)
  @IsString({ each: true })
  sources?: string[];

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: MATCH_DOC })
  @IsOptional()
  @IsObject()
  match?: Record<string, unknown>;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: TEMPLATE_DOC })
  @IsOptional()
  @IsObject()
  template?: Record<string, unknown>;

  @ApiPropertyOptional()
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;
}

export class LogRuleDto {
  @ApiProperty() rule_id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ type: [String] }) sources!: string[];
  @ApiProperty({ type: 'object', additionalProperties: true }) match!: Record<string, unknown>;
  @ApiProperty({ type: 'object', additionalProperties: true }) template!: Record<string, unknown>;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'the one tenant whose logs it reads; null: every log',
  })
  tenant!: string | null;
  @ApiProperty() enabled!: boolean;
  @ApiProperty({ format: 'date-time' }) created_at!: string;
  @ApiProperty({ format: 'date-time' }) updated_at!: string;
}

export function toLogRuleDto(m: LogRuleModel): LogRuleDto {
  return {
    rule_id: m.ruleId,
    name: m.name,
    sources: m.sources,
    match: m.match as Record<string, unknown>,
    template: m.template,
    tenant: m.tenant,
    enabled: m.enabled,
    created_at: new Date(m.createdAt).toISOString(),
    updated_at: new Date(m.updatedAt).toISOString(),
  };
}

/** Body of `POST /v1/log-rules/test`. */
export class TestLogRuleDto {
  @ApiProperty({
    type: CreateLogRuleDto,
    description: 'a rule as `POST /v1/log-rules` takes it (checked the same way; not stored)',
  })
  @IsObject()
  @ValidateNested()
  @Type(() => CreateLogRuleDto)
  rule!: CreateLogRuleDto;

  @ApiProperty({
    minLength: 1,
    maxLength: MAX_LINE_CHARS,
    description:
      'one log line, as a source would send it (a JSON object line also gives its fields to JSON rules)',
  })
  @IsString()
  @Length(1, MAX_LINE_CHARS)
  line!: string;

  @ApiPropertyOptional({
    default: 'http:test',
    pattern: '^(http|file|stream):[A-Za-z0-9._-]{1,64}$',
    description:
      'the source the line is taken to come from (`{{_source}}`, and whether the rule reads it)',
  })
  @IsOptional()
  @Matches(/^(http|file|stream):[A-Za-z0-9._-]{1,64}$/, {
    message: 'source must be http:<name>, file:<name> or stream:<name>',
  })
  source?: string;
}

/** What a rule makes of one line: whether it matches, and the task it would make. */
export class LogRuleTestDto {
  @ApiProperty({ description: "the rule's match takes the line" }) matched!: boolean;
  @ApiProperty({ description: "the rule's sources include the line's source" })
  source_applies!: boolean;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description:
      'the create-task body the LogDumper would send for this line (its idempotency key and log_rule label name a stand-in rule id); null when it does not match',
  })
  task!: Record<string, unknown> | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'why the scheduler would refuse that task (the LogDumper counts it as rejected); null when it would make it',
  })
  task_error!: string | null;
}

export const toLogRuleTestDto = (t: LogRuleTest): LogRuleTestDto => ({
  matched: t.matched,
  source_applies: t.sourceApplies,
  task: t.task,
  task_error: t.taskError,
});
