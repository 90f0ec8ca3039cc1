import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Envelope, ok } from '@baton/task-contract';
import { Access } from './access';
import { AuditLog } from './audit';
import { AuditEntryDto, AuditQueryDto, toAuditEntryDto } from './dto/audit.dto';

@ApiTags('audit')
@Access('admin')
@Controller('v1/audit')
export class AuditController {
  constructor(private readonly audit: AuditLog) {}

  @Get()
  @ApiOperation({
    summary:
      'configuration changes made through the API, newest first: timers, log rules, task types, tenants, API keys',
  })
  @ApiOkResponse({ type: [AuditEntryDto] })
  async list(@Query() q: AuditQueryDto): Promise<Envelope<AuditEntryDto[]>> {
    const entries = await this.audit.list({
      limit: q.limit ?? 100,
      before: q.before,
      actor: q.actor,
      action: q.action,
    });
    return ok(entries.map(toAuditEntryDto));
  }
}
