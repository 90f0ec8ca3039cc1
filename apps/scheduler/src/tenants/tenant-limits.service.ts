import { Inject, Injectable } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { DataSource } from 'typeorm';
import { Clock, TENANT_PATTERN } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TenantLimitEntity } from './tenant-limit.entity';

/** How long a tenant's limits are trusted before they are read again (another instance may set them). */
const CACHE_MS = 2000;

/** What holds for one tenant now. */
export interface TenantLimits {
  tenant: string;
  /** Starts per second over the fleet; null: none. */
  ratePerSec: number | null;
  /** Tasks on a worker at once (CREATE, PREPARE, RUNNING) over the fleet; null: none. */
  concurrency: number | null;
  source: 'api' | 'config';
  updatedAt: number | null;
}

/**
 * Per-tenant limits: set at run time through `/v1/tenants/{tenant}/limits` (a row), otherwise the
 * configured defaults. Read on every start, so cached briefly; a change made through any instance
 * holds everywhere within CACHE_MS.
 */
@Injectable()
export class TenantLimitsService {
  private readonly cache = new Map<string, { limits: TenantLimits; at: number }>();

  constructor(
    private readonly db: DataSource,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  /** The tenant's limits (cached). */
  async of(tenant: string): Promise<TenantLimits> {
    const now = this.clock.now();
    const hit = this.cache.get(tenant);
    if (hit && now - hit.at < CACHE_MS) return hit.limits;
    const limits = await this.read(tenant);
    this.cache.set(tenant, { limits, at: now });
    return limits;
  }

  /** The tenant's limits as stored now (no cache): for the API. */
  get(tenant: string): Promise<TenantLimits> {
    return this.read(checked(tenant));
  }

  /** Every tenant whose limits were set through the API. */
  async list(): Promise<TenantLimits[]> {
    const rows = await this.db.manager.find(TenantLimitEntity, { order: { tenant: 'ASC' } });
    return rows.map(fromRow);
  }

  /** Sets the given fields (null: no limit); the others keep what holds now. */
  async set(
    tenant: string,
    change: { rate_limit_per_sec?: number | null; concurrency_limit?: number | null },
  ): Promise<TenantLimits> {
    const current = await this.read(checked(tenant));
    const row: TenantLimitEntity = {
      tenant,
      rate_limit_per_sec:
        change.rate_limit_per_sec !== undefined ? change.rate_limit_per_sec : current.ratePerSec,
      concurrency_limit:
        change.concurrency_limit !== undefined ? change.concurrency_limit : current.concurrency,
      updated_at: this.clock.now(),
    };
    await this.db.manager.save(TenantLimitEntity, row);
    this.cache.delete(tenant);
    return fromRow(row);
  }

  /** Drops what was set through the API: the defaults hold again. */
  async reset(tenant: string): Promise<TenantLimits> {
    await this.db.manager.delete(TenantLimitEntity, { tenant: checked(tenant) });
    this.cache.delete(tenant);
    return this.read(tenant);
  }

  private async read(tenant: string): Promise<TenantLimits> {
    const row = await this.db.manager.findOneBy(TenantLimitEntity, { tenant });
    if (row) return fromRow(row);
    const { tenantRates, tenantRateDefault } = this.config.dispatcher;
    const rate = tenantRates[tenant] ?? tenantRateDefault;
    return {
      tenant,
      ratePerSec: rate > 0 ? rate : null,
      concurrency: null,
      source: 'config',
      updatedAt: null,
    };
  }
}

const fromRow = (r: TenantLimitEntity): TenantLimits => ({
  tenant: r.tenant,
  ratePerSec: r.rate_limit_per_sec,
  concurrency: r.concurrency_limit,
  source: 'api',
  updatedAt: r.updated_at,
});

function checked(tenant: string): string {
  if (!TENANT_PATTERN.test(tenant))
    throw new ContractException(
      ContractErrorCode.VALIDATION_FAILED,
      'tenant must be a lower-case name: [a-z0-9][a-z0-9_-]{0,99}',
      { tenant },
    );
  return tenant;
}
