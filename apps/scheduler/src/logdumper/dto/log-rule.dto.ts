import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
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
} from 'class-validator';
import { TENANT_PATTERN } from '../../common';
import { LogRuleModel } from '../log-rule.model';

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
