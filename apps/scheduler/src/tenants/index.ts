import { TenantLimitEntity } from './tenant-limit.entity';

export * from './tenant-limits.service';
export * from './tenants.module';

/** The tables this module owns, for the data source. */
export const TENANTS_ENTITIES = [TenantLimitEntity];
