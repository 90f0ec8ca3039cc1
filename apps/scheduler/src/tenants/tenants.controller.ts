import { Body, Controller, Delete, Get, Param, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Envelope, ok } from '@baton/task-contract';
import { SetTenantLimitsDto, TenantLimitsDto, toTenantLimitsDto } from './dto/tenant-limits.dto';
import { TenantLimitsService } from './tenant-limits.service';
import { Access, Audited, TenantFields } from '../auth';
import { TenantQuery } from '../common';

@ApiTags('tenants')
@Access('admin')
@Controller('v1/tenants')
export class TenantsController {
  constructor(private readonly limits: TenantLimitsService) {}

  @Access('read')
  @Get()
  @TenantFields('query.tenant')
  @ApiOperation({ summary: 'tenants whose limits were set through the API' })
  @ApiOkResponse({ type: [TenantLimitsDto] })
  async list(@Query() q: TenantQuery): Promise<Envelope<TenantLimitsDto[]>> {
    const all = (await this.limits.list()).map(toTenantLimitsDto);
    return ok(q.tenant === undefined ? all : all.filter((t) => t.tenant === q.tenant));
  }

  @Access('read')
  @Get(':tenant/limits')
  @ApiOperation({ summary: "a tenant's start-rate and concurrency limits, over all instances" })
  @ApiOkResponse({ type: TenantLimitsDto })
  async get(@Param('tenant') tenant: string): Promise<Envelope<TenantLimitsDto>> {
    return ok(toTenantLimitsDto(await this.limits.get(tenant)));
  }

  @Put(':tenant/limits')
  @Audited('tenant-limits.set', 'tenant')
  @ApiOperation({
    summary: "set a tenant's limits (null: no limit); every instance follows within 2 s",
  })
  @ApiOkResponse({ type: TenantLimitsDto })
  async set(
    @Param('tenant') tenant: string,
    @Body() dto: SetTenantLimitsDto,
  ): Promise<Envelope<TenantLimitsDto>> {
    return ok(toTenantLimitsDto(await this.limits.set(tenant, dto)));
  }

  @Delete(':tenant/limits')
  @Audited('tenant-limits.reset', 'tenant')
  @ApiOperation({ summary: "drop a tenant's limits set through the API: the defaults hold again" })
  @ApiOkResponse({ type: TenantLimitsDto })
  async reset(@Param('tenant') tenant: string): Promise<Envelope<TenantLimitsDto>> {
    return ok(toTenantLimitsDto(await this.limits.reset(tenant)));
  }
}
