import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { Envelope, ok } from '@baton/task-contract';
import { Access, Caller, Principal } from '../auth';
import { DecimalInt } from '../common';
import { PendingApprovalPageDto } from './dto/topology-run.dto';
import { RunApprovals, mayDecide } from './run-approvals';

class ApprovalsQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 500, default: 100 })
  @IsOptional()
  @DecimalInt()
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;
}

@ApiTags('topologies')
@Access('read')
@Controller('v1/topology-approvals')
export class TopologyApprovalsController {
  constructor(private readonly approvals: RunApprovals) {}

  @Get()
  @ApiOperation({
    summary:
      "approval nodes waiting for a decision, in runs still going, oldest request first (a tenant key's tenant only), each saying whether the calling key may decide it",
  })
  @ApiOkResponse({ type: PendingApprovalPageDto })
  async list(
    @Query() q: ApprovalsQuery,
    @Caller() who: Principal | undefined,
  ): Promise<Envelope<PendingApprovalPageDto>> {
    const items = await this.approvals.pending(who?.tenant ?? null, q.limit ?? 100);
    return ok({
      items: items.map((a) => ({
        run_id: a.runId,
        name: a.name,
        version: a.version,
        tenant: a.tenant,
        node: a.node,
        message: a.request.message,
        requested_at: new Date(a.requestedAt).toISOString(),
        timeout_at: new Date(a.request.until).toISOString(),
        on_timeout: a.request.on_timeout,
        approvers: a.request.approvers,
        may_decide: mayDecide(who, a.request.approvers),
      })),
    });
  }
}
