import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, Matches } from 'class-validator';

/** A tenant's name: lower-case letters, digits, `_` and `-`, up to 100 characters. */
export const TENANT_PATTERN = /^[a-z0-9][a-z0-9_-]{0,99}$/;

/** The tenant every task, timer and rule without one belongs to. */
export const DEFAULT_TENANT = 'default';

/** Query string of the lists that can be narrowed to one tenant (a tenant's key: always its own). */
export class TenantQuery {
  @ApiPropertyOptional({
    pattern: TENANT_PATTERN.source,
    description: "only this tenant's (a key of one tenant sees its own only)",
  })
  @IsOptional()
  @Matches(TENANT_PATTERN, { message: 'tenant must be a lower-case name' })
  tenant?: string;
}
