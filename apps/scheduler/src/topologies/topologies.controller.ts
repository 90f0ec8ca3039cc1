import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import { ContractErrorCode, ContractException, Envelope, ok } from '@baton/task-contract';
import { Access, Actor, Audited, TenantFields } from '../auth';
import { ApiErrors, TenantQuery, idempotencyKeyOf } from '../common';
import { toRunDto } from './dto/topology-run.mapping';
import {
  StartRunDto,
  TopologyCheckDto,
  TopologyDefinitionDto,
  TopologyDto,
  toTopologyDto,
} from './dto/topology.dto';
import { TopologyRunDto } from './dto/topology-run.dto';
import { TopologiesService } from './topologies.service';
import { TopologyRunsService } from './topology-runs.service';

interface ReplyLike {
  status(code: number): ReplyLike;
}

function versionOf(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^[1-9][0-9]{0,8}$/.test(v))
    throw new ContractException(
      ContractErrorCode.VALIDATION_FAILED,
      'version must be a positive integer',
    );
  return Number(v);
}

@ApiTags('topologies')
@Access('operate')
@Controller('v1/topologies')
export class TopologiesController {
  constructor(
    private readonly topologies: TopologiesService,
    private readonly runs: TopologyRunsService,
  ) {}

  @Post()
  @TenantFields('body.tenant')
  @Audited('topology.save', 'name')
  @HttpCode(201)
  @ApiOperation({
    summary: 'save a definition: a new version when it differs from the newest, checked first',
    description:
      'Answers 201 with the new version, or 200 with the newest when the body equals it (applying the same file again changes nothing). Runs keep the version they started with.',
  })
  @ApiCreatedResponse({ type: TopologyDto, description: 'the new version' })
  @ApiOkResponse({ type: TopologyDto, description: 'the body equals the newest version' })
  async save(
    @Body() dto: TopologyDefinitionDto,
    @Actor() actor: string,
    @Res({ passthrough: true }) reply: ReplyLike,
  ): Promise<Envelope<TopologyDto>> {
    const { tenant, ...body } = dto;
    const { version, created } = await this.topologies.save(body, tenant ?? null, actor);
    reply.status(created ? 201 : 200);
    return ok(toTopologyDto(version));
  }

  @Post('check')
  @TenantFields('body.tenant')
  @HttpCode(200)
  @ApiOperation({ summary: 'check a definition as saving would, storing nothing' })
  @ApiOkResponse({ type: TopologyCheckDto, description: 'the definition would be saved' })
  async check(@Body() dto: TopologyDefinitionDto): Promise<Envelope<TopologyCheckDto>> {
    const { tenant: _tenant, ...body } = dto;
    const spec = await this.topologies.check(body);
    return ok({ valid: true, nodes: spec.nodes.length });
  }

  @Access('read')
  @Get()
  @TenantFields('query.tenant')
  @ApiOperation({
    summary: "the newest version of each definition (a tenant's and the shared ones)",
  })
  @ApiOkResponse({ type: [TopologyDto] })
  async list(@Query() q: TenantQuery): Promise<Envelope<TopologyDto[]>> {
    return ok((await this.topologies.list(q.tenant)).map(toTopologyDto));
  }

  @Access('read')
  @Get(':topology')
  @ApiOperation({ summary: 'a definition: the newest version, or the one asked for' })
  @ApiQuery({ name: 'version', required: false, type: Number })
  @ApiOkResponse({ type: TopologyDto })
  async get(
    @Param('topology') name: string,
    @Query('version') version?: string,
  ): Promise<Envelope<TopologyDto>> {
    return ok(toTopologyDto(await this.topologies.get(name, versionOf(version))));
  }

  @Access('read')
  @Get(':topology/versions')
  @ApiOperation({ summary: 'every version of a definition, newest first' })
  @ApiOkResponse({ type: [TopologyDto] })
  async versions(@Param('topology') name: string): Promise<Envelope<TopologyDto[]>> {
    return ok((await this.topologies.history(name)).map(toTopologyDto));
  }

  @Post(':topology/runs')
  @TenantFields('body.tenant')
  @HttpCode(201)
  @ApiOperation({
    summary: 'start a run',
    description:
      'Answers 201 with the new run (its centre task in INIT; the nodes start within moments), or 200 with the run an earlier start under the same Idempotency-Key made.',
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'a start sent again with the same key (and tenant) answers the run the first made',
  })
  @ApiCreatedResponse({ type: TopologyRunDto, description: 'the new run' })
  @ApiOkResponse({
    type: TopologyRunDto,
    description: 'the run an earlier start with this key made',
  })
  @ApiErrors(ContractErrorCode.NOT_FOUND)
  async start(
    @Param('topology') name: string,
    @Body() dto: StartRunDto,
    @Headers('idempotency-key') key: string | undefined,
    @Res({ passthrough: true }) reply: ReplyLike,
  ): Promise<Envelope<TopologyRunDto>> {
    idempotencyKeyOf(key);
    const { state, created } = await this.runs.start(name, {
      input: dto.input ?? {},
      tenant: dto.tenant,
      labels: dto.labels,
      version: dto.version,
      idempotencyKey: key,
      deadlineSeconds: dto.deadline_seconds,
    });
    reply.status(created ? 201 : 200);
    return ok(toRunDto(state));
  }
}
