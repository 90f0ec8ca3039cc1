import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ContractErrorCode, Envelope, ok } from '@baton/task-contract';
import { Access, Actor, Audited, Caller, Principal, TenantFields } from '../auth';
import { ApiErrors } from '../common';
import { taskFilterOf } from '../tasks';
import { ListRunsQuery, toHistoryDto, toRunDto } from './dto/topology-run.mapping';
import { DecisionDto, SignalDto } from './dto/topology.dto';
import { RunApprovals } from './run-approvals';
import { RunHistoryDto, TopologyRunDto, TopologyRunPageDto } from './dto/topology-run.dto';
import { TopologyHistory } from './topology-history';
import { RunRepairs } from './run-repairs';
import { TopologyRunsService } from './topology-runs.service';

@ApiTags('topologies')
@Access('operate')
@Controller('v1/topology-runs')
export class TopologyRunsController {
  constructor(
    private readonly runs: TopologyRunsService,
    private readonly repairs: RunRepairs,
    private readonly history: TopologyHistory,
    private readonly approvals: RunApprovals,
  ) {}

  @Access('read')
  @Get()
  @TenantFields('query.tenant')
  @ApiOperation({
    summary: 'list runs, newest first, by definition, status, outcome, tenant, label, time',
  })
  @ApiOkResponse({ type: TopologyRunPageDto })
  async list(@Query() q: ListRunsQuery): Promise<Envelope<TopologyRunPageDto>> {
    const page = await this.runs.list(
      { ...taskFilterOf(q), name: q.name },
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

  @Access('read')
  @Get(':run_id/history')
  @ApiOperation({
    summary:
      "what happened in a run, oldest first: every attempt of every node's task (handlers and finally-nodes too), every decision, the run's moves and the repairs people made; a retry or re-run adds to it, never overwrites it",
  })
  @ApiOkResponse({ type: RunHistoryDto })
  @ApiErrors(ContractErrorCode.NOT_FOUND)
  async runHistory(@Param('run_id') runId: string): Promise<Envelope<RunHistoryDto>> {
    const entries = await this.history.read(runId);
    return ok({ run_id: runId, entries: entries.map(toHistoryDto) });
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

  @Post(':run_id/retry')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'retry a run that finished without success from its failed nodes: succeeded nodes keep their results, failed ones re-run their tasks, the graph intact',
  })
  @ApiOkResponse({ type: TopologyRunDto })
  @ApiErrors(ContractErrorCode.ILLEGAL_TRANSITION)
  async retry(
    @Param('run_id') runId: string,
    @Actor() actor: string,
  ): Promise<Envelope<TopologyRunDto>> {
    await this.repairs.retry(runId, actor);
    return ok(toRunDto(await this.runs.get(runId)));
  }

  @Post(':run_id/nodes/:node/rerun')
  @HttpCode(200)
  @ApiOperation({
    summary: 're-run one node and every node after it (a finished run runs again)',
  })
  @ApiOkResponse({ type: TopologyRunDto })
  @ApiErrors(ContractErrorCode.ILLEGAL_TRANSITION)
  async rerunNode(
    @Param('run_id') runId: string,
    @Param('node') node: string,
    @Actor() actor: string,
  ): Promise<Envelope<TopologyRunDto>> {
    await this.repairs.rerunNode(runId, node, actor);
    return ok(toRunDto(await this.runs.get(runId)));
  }

  @Post(':run_id/nodes/:node/skip')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'skip a pending or failed node: it is SKIPPED, and its dependants go on as if it had succeeded',
  })
  @ApiOkResponse({ type: TopologyRunDto })
  @ApiErrors(ContractErrorCode.ILLEGAL_TRANSITION, ContractErrorCode.VALIDATION_FAILED)
  async skip(
    @Param('run_id') runId: string,
    @Param('node') node: string,
    @Actor() actor: string,
  ): Promise<Envelope<TopologyRunDto>> {
    await this.repairs.skip(runId, node, actor);
    return ok(toRunDto(await this.runs.get(runId)));
  }

  @Post(':run_id/nodes/:node/approve')
  @HttpCode(200)
  @Audited('topology_run.approve', 'run_id/node')
  @ApiOperation({
    summary:
      "approve an approval node that waits for a decision: it succeeds and the run goes on; who, when and the comment go to the run's history and the audit log. Only a key the node allows (its approvers; none named: any operator or admin) of the run's tenant",
  })
  @ApiOkResponse({ type: TopologyRunDto })
  @ApiErrors(
    ContractErrorCode.ILLEGAL_TRANSITION,
    ContractErrorCode.FORBIDDEN,
    ContractErrorCode.VALIDATION_FAILED,
  )
  async approve(
    @Param('run_id') runId: string,
    @Param('node') node: string,
    @Body() dto: DecisionDto,
    @Caller() who: Principal | undefined,
  ): Promise<Envelope<TopologyRunDto>> {
    await this.approvals.decide(runId, node, 'approve', dto.comment ?? null, who);
    return ok(toRunDto(await this.runs.get(runId)));
  }

  @Post(':run_id/nodes/:node/reject')
  @HttpCode(200)
  @Audited('topology_run.reject', 'run_id/node')
  @ApiOperation({
    summary:
      "reject an approval node that waits for a decision: it fails (its error says who and why) and the run fails as on any failure; kept in the run's history and the audit log",
  })
  @ApiOkResponse({ type: TopologyRunDto })
  @ApiErrors(
    ContractErrorCode.ILLEGAL_TRANSITION,
    ContractErrorCode.FORBIDDEN,
    ContractErrorCode.VALIDATION_FAILED,
  )
  async reject(
    @Param('run_id') runId: string,
    @Param('node') node: string,
    @Body() dto: DecisionDto,
    @Caller() who: Principal | undefined,
  ): Promise<Envelope<TopologyRunDto>> {
    await this.approvals.decide(runId, node, 'reject', dto.comment ?? null, who);
    return ok(toRunDto(await this.runs.get(runId)));
  }
}
