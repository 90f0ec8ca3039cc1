import { Module } from '@nestjs/common';
import { TenantLimitsService } from './tenant-limits.service';
import { TenantsController } from './tenants.controller';

/** Tenants' limits (start rate, concurrency), set at run time and shared by the fleet. */
@Module({
  controllers: [TenantsController],
  providers: [TenantLimitsService],
  exports: [TenantLimitsService],
})
export class TenantsModule {}
