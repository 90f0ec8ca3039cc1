import { Module, OnModuleInit } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { AuthModule, TenantScopes } from '../auth';
import { TenantLimitsService } from './tenant-limits.service';
import { TenantsController } from './tenants.controller';

/** Tenants' limits (start rate, concurrency), set at run time and shared by the fleet. */
@Module({
  imports: [AuthModule],
  controllers: [TenantsController],
  providers: [TenantLimitsService],
  exports: [TenantLimitsService],
})
export class TenantsModule implements OnModuleInit {
  constructor(private readonly scopes: TenantScopes) {}

  /** A tenant's key sees its own tenant's limits only (TenantScopes). */
  onModuleInit(): void {
    this.scopes.owns(
      'tenant',
      async (tenant) => tenant,
      (tenant) =>
        new ContractException(ContractErrorCode.NOT_FOUND, `tenant ${tenant} is not known`, {
          tenant,
        }),
    );
  }
}
