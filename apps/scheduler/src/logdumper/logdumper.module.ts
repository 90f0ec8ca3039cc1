import { Module, OnModuleInit } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { AuthModule, TenantScopes } from '../auth';
import { TasksModule } from '../tasks';
import { LogIngestService } from './log-ingest.service';
import { LogOffsetsRepository } from './log-offsets.repository';
import { LogProcessorService } from './log-processor.service';
import { LogRulesController } from './log-rules.controller';
import { LogRulesRepository } from './log-rules.repository';
import { tenantOfRule } from './log-rule.model';
import { LogRulesService } from './log-rules.service';
import { LogSourcesService } from './log-sources.service';
import { LogDumperCounters } from './logdumper.counters';
import { LogsController } from './logs.controller';

/** The LogDumper: tasks from log records (HTTP ingest, tailed files, Redis streams) through rules. */
@Module({
  imports: [AuthModule, TasksModule],
  controllers: [LogRulesController, LogsController],
  providers: [
    LogDumperCounters,
    LogRulesRepository,
    LogOffsetsRepository,
    LogRulesService,
    LogProcessorService,
    LogIngestService,
    LogSourcesService,
  ],
})
export class LogDumperModule implements OnModuleInit {
  constructor(
    private readonly scopes: TenantScopes,
    private readonly rules: LogRulesRepository,
  ) {}

  /** A log rule belongs to the tenant of the tasks it makes (TenantScopes). */
  onModuleInit(): void {
    this.scopes.owns(
      'rule_id',
      async (id) => {
        const rule = await this.rules.find(id);
        return rule && tenantOfRule(rule);
      },
      (id) =>
        new ContractException(ContractErrorCode.NOT_FOUND, `log rule ${id} does not exist`, {
          rule_id: id,
        }),
    );
  }
}
