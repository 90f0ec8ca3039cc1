import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, Matches, Max, MaxLength, Min } from 'class-validator';
import { AuditEntryEntity } from '../audit-entry.entity';
import { DecimalInt } from '../../common';

/** Query string of `GET /v1/audit`. */
export class AuditQueryDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 500, default: 100 })
  @IsOptional()
  @DecimalInt()
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;

  @ApiPropertyOptional({ description: 'the audit_id of the last entry of the page before' })
  @IsOptional()
  @Matches(/^[0-9A-HJKMNP-TV-Z]{26}$/, { message: 'before must be an audit_id' })
  before?: string;

  @ApiPropertyOptional({ example: 'key:deploy-bot' })
  @IsOptional()
  @MaxLength(120)
  actor?: string;

  @ApiPropertyOptional({ example: 'timer.update' })
  @IsOptional()
  @MaxLength(40)
  action?: string;
}

export class AuditEntryDto {
  @ApiProperty() audit_id!: string;
  @ApiProperty({ format: 'date-time' }) at!: string;
  @ApiProperty({ description: '`key:<name>` of the API key, or `api` with the API open' })
  actor!: string;
  @ApiProperty({ example: 'timer.update' }) action!: string;
  @ApiProperty({ type: String, nullable: true }) target!: string | null;
  @ApiProperty({ nullable: true, description: 'the body sent' }) detail!: unknown;
}

export function toAuditEntryDto(e: AuditEntryEntity): AuditEntryDto {
  return {
    audit_id: e.audit_id,
    at: new Date(e.at).toISOString(),
    actor: e.actor,
    action: e.action,
    target: e.target,
    detail: e.detail,
  };
}
