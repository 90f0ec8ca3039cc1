import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { TenantLimits } from '../tenant-limits.service';

export class TenantLimitsDto {
  @ApiProperty() tenant!: string;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'most task starts per second over all scheduler instances; null: no limit',
  })
  rate_limit_per_sec!: number | null;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description:
      'most tasks on a worker at once (CREATE, PREPARE or RUNNING) over all scheduler instances; null: no limit',
  })
  concurrency_limit!: number | null;

  @ApiProperty({
    enum: ['api', 'config'],
    description:
      '`api`: set through this route; `config`: the defaults (BATON_TENANT_RATE_LIMITS, BATON_TENANT_RATE_LIMIT)',
  })
  source!: 'api' | 'config';

  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  updated_at!: string | null;
}

export class SetTenantLimitsDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 100000,
    nullable: true,
    description: 'starts per second over the fleet; null: no limit; absent: unchanged',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100_000)
  rate_limit_per_sec?: number | null;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 1000000,
    nullable: true,
    description:
      'tasks on a worker at once (CREATE, PREPARE or RUNNING) over the fleet; null: no limit; absent: unchanged',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  concurrency_limit?: number | null;
}

export const toTenantLimitsDto = (l: TenantLimits): TenantLimitsDto => ({
  tenant: l.tenant,
  rate_limit_per_sec: l.ratePerSec,
  concurrency_limit: l.concurrency,
  source: l.source,
  updated_at: l.updatedAt === null ? null : new Date(l.updatedAt).toISOString(),
});
