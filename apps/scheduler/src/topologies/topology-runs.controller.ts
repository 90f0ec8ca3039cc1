import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ContractErrorCode, Envelope, ok } from '@baton/task-contract';
import { Access, TenantFields } from '../auth';
import { ApiErrors } from '../common';
import { ListRunsQuery, toRunDto } from './dto/topology-run.mapping';
import { SignalDto, TopologyRunDto, TopologyRunPageDto } from './dto/topology.dto';
import { TopologyRunsService } from './topology-runs.service';

@ApiTags('topologies')
@Access('operate')
@Controller('v1/topology-runs')
export class TopologyRunsController {
  constructor(private readonly runs: TopologyRunsService) {}

  @Access('read')
  @Get()
  @TenantFields('query.tenant')
  @ApiOperation({ summary: 'list runs, newest first, by definition, status, tenant, label, time' })
  @ApiOkResponse({ type: TopologyRunPageDto })
  async list(@Query() q: ListRunsQuery): Promise<Envelope<TopologyRunPageDto>> {
    const [key, ...rest] = q.label ? q.label.split(':') : [];
    const page = await this.runs.list(
      {
        name: q.name,
        tenant: q.tenant,
        status: q.status,
        label: q.label ? { key, value: rest.join(':') } : undefined,
        createdFrom: q.created_from ? Date.parse(q.created_from) : undefined,
        createdTo: q.created_to ? Date.parse(q.created_to) : undefined,
      },
      q.cursor,
      q.limit ?? 50,
    );
    return ok({ items: page.items.map(toRunDto), next_cursor: page.nextCursor });
  }

  @Access('read')
  @Get(':run_id')
  @ApiOperation({
    summary: "a run and its graph: each node's status, task, attempt, timing, progress and result",
  })
  @ApiOkResponse({ type: TopologyRunDto })
  async get(@Param('run_id') runId: string): Promise<Envelope<TopologyRunDto>> {
    return ok(toRunDto(await this.runs.get(runId)));
  }

  @Post(':run_id/cancel')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'cancel a run: no node starts any more, running node tasks are cancelled through the contract; the run ends FINISH with error code cancelled',
  })
  @ApiOkResponse({ type: TopologyRunDto })
  @ApiErrors(ContractErrorCode.ILLEGAL_TRANSITION)
  async cancel(@Param('run_id') runId: string): Promise<Envelope<TopologyRunDto>> {
    return ok(toRunDto(await this.runs.cancel(runId)));
  }

  @Post(':run_id/pause')
  @HttpCode(200)
  @ApiOperation({ summary: 'pause a run: no node starts until continue; running nodes go on' })
  @ApiOkResponse({ type: TopologyRunDto })
  @ApiErrors(ContractErrorCode.ILLEGAL_TRANSITION)
  async pause(@Param('run_id') runId: string): Promise<Envelope<TopologyRunDto>> {
    return ok(toRunDto(await this.runs.pause(runId)));
  }

  @Post(':run_id/continue')
  @HttpCode(200)
  @ApiOperation({ summary: 'continue a paused run' })
  @ApiOkResponse({ type: TopologyRunDto })
  @ApiErrors(ContractErrorCode.ILLEGAL_TRANSITION)
  async resume(@Param('run_id') runId: string): Promise<Envelope<TopologyRunDto>> {
    return ok(toRunDto(await this.runs.resume(runId)));
  }

  @Post(':run_id/signal')
  @HttpCode(200)
  @ApiOperation({
    summary: 'end the wait of the nodes waiting for this signal; data becomes their result',
  })
  @ApiOkResponse({ type: TopologyRunDto })
  @ApiErrors(ContractErrorCode.ILLEGAL_TRANSITION)
  async signal(
    @Param('run_id') runId: string,
    @Body() dto: SignalDto,
  ): Promise<Envelope<TopologyRunDto>> {
    return ok(toRunDto(await this.runs.signal(runId, dto.signal, dto.data ?? {})));
  }
}
