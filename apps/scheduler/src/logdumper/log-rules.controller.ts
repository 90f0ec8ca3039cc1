import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Envelope, ok } from '@baton/task-contract';
import {
  CreateLogRuleDto,
  LogRuleDto,
  LogRuleTestDto,
  TestLogRuleDto,
  UpdateLogRuleDto,
  toLogRuleDto,
  toLogRuleTestDto,
} from './dto/log-rule.dto';
import { LogRulesService } from './log-rules.service';
import { Access, Audited, TenantFields } from '../auth';
import { TenantQuery } from '../common';

@ApiTags('log rules')
@Access('operate')
@Controller('v1/log-rules')
export class LogRulesController {
  constructor(private readonly rules: LogRulesService) {}

  @Post()
  @TenantFields('body.tenant', 'body.template.tenant')
  @Audited('log-rule.create', 'rule_id')
  @HttpCode(201)
  @ApiOperation({
    summary: 'create a LogDumper rule: a match and a task template filled from its captures',
  })
  @ApiOkResponse({ type: LogRuleDto })
  async create(@Body() dto: CreateLogRuleDto): Promise<Envelope<LogRuleDto>> {
    return ok(toLogRuleDto(await this.rules.create(dto)));
  }

  @Post('test')
  @TenantFields('body.rule.tenant', 'body.rule.template.tenant')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'try a rule on one log line before saving it: whether it matches, and the task it would make',
    description:
      "The rule is checked as `POST /v1/log-rules` checks it (the same 400s) and run through the LogDumper's own matcher and template filling. Nothing is stored and no task is made.",
  })
  @ApiOkResponse({ type: LogRuleTestDto })
  async test(@Body() dto: TestLogRuleDto): Promise<Envelope<LogRuleTestDto>> {
    return ok(toLogRuleTestDto(await this.rules.test(dto)));
  }

  @Access('read')
  @Get()
  @TenantFields('query.tenant')
  @ApiOperation({ summary: 'list LogDumper rules' })
  @ApiOkResponse({ type: [LogRuleDto] })
  async list(@Query() q: TenantQuery): Promise<Envelope<LogRuleDto[]>> {
    return ok((await this.rules.list(q.tenant)).map(toLogRuleDto));
  }

  @Access('read')
  @Get(':rule_id')
  @ApiOperation({ summary: 'get a LogDumper rule' })
  @ApiOkResponse({ type: LogRuleDto })
  async get(@Param('rule_id') ruleId: string): Promise<Envelope<LogRuleDto>> {
    return ok(toLogRuleDto(await this.rules.get(ruleId)));
  }

  @Patch(':rule_id')
  @TenantFields('body.template.tenant')
  @Audited('log-rule.update', 'rule_id')
  @ApiOperation({ summary: 'change a rule, or enable / disable it with {"enabled": false}' })
  @ApiOkResponse({ type: LogRuleDto })
  async update(
    @Param('rule_id') ruleId: string,
    @Body() dto: UpdateLogRuleDto,
  ): Promise<Envelope<LogRuleDto>> {
    return ok(toLogRuleDto(await this.rules.update(ruleId, dto)));
  }

  @Delete(':rule_id')
  @Audited('log-rule.delete', 'rule_id')
  @ApiOperation({ summary: 'delete a rule (the tasks it made stay)' })
  @ApiOkResponse({ schema: { nullable: true, enum: [null], description: 'always null' } })
  async remove(@Param('rule_id') ruleId: string): Promise<Envelope<null>> {
    await this.rules.remove(ruleId);
    return ok(null);
  }
}
