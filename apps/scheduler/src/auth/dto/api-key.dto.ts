import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDateString, IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { TENANT_PATTERN } from '../../common';
import { ROLES, Role } from '../access';
import { ApiKeyEntity } from '../api-key.entity';

/** Body of `POST /v1/api-keys`. */
export class CreateApiKeyDto {
  @ApiProperty({ maxLength: 100, example: 'deploy-bot' })
  @IsString()
  @MaxLength(100)
  name!: string;

  @ApiProperty({
    enum: ROLES,
    description:
      'viewer: reads; operator: also creates and acts on tasks, timers, log rules and log ingest; admin: everything (task types, tenants, API keys)',
  })
  @IsIn(ROLES)
  role!: Role;

  @ApiPropertyOptional({
    pattern: TENANT_PATTERN.source,
    example: 'payments',
    description:
      "limit the key to one tenant: it sees only that tenant's tasks, timers and log rules (another tenant's id answers 404), and creates only there. A viewer or an operator; admin keys span every tenant",
  })
  @IsOptional()
  @Matches(TENANT_PATTERN, { message: 'tenant must be a lower-case name' })
  tenant?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'refused from then on' })
  @IsOptional()
  @IsDateString({ strict: true })
  expires_at?: string;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export class ApiKeyDto {
  @ApiProperty() key_id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ enum: ROLES }) role!: string;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'the one tenant it may reach; null: all',
  })
  tenant!: string | null;
  @ApiProperty({ description: 'the start of the secret, to recognise it' }) prefix!: string;
  @ApiProperty({ format: 'date-time' }) created_at!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) expires_at!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) revoked_at!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) last_used_at!: string | null;
}

export class NewApiKeyDto extends ApiKeyDto {
  @ApiProperty({ description: 'the secret: shown this once, never again' }) key!: string;
}

export function toApiKeyDto(k: ApiKeyEntity): ApiKeyDto {
  return {
    key_id: k.key_id,
    name: k.name,
    role: k.role,
    tenant: k.tenant,
    prefix: k.prefix,
    created_at: new Date(k.created_at).toISOString(),
    expires_at: iso(k.expires_at),
    revoked_at: iso(k.revoked_at),
    last_used_at: iso(k.last_used_at),
  };
}
