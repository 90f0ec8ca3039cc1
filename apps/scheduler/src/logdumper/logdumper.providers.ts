import { Provider, Type } from '@nestjs/common';
import { LogIngestService } from './log-ingest.service';
import { LogOffsetsRepository } from './log-offsets.repository';
import { LogProcessorService } from './log-processor.service';
import { LogRulesController } from './log-rules.controller';
import { LogRulesRepository } from './log-rules.repository';
import { LogRulesService } from './log-rules.service';
import { LogSourcesService } from './log-sources.service';
import { LogDumperCounters } from './logdumper.counters';
import { LogsController } from './logs.controller';

/**
 * The LogDumper's parts, listed into SchedulerAppModule: they create tasks through TasksService,
 * which lives there, so a separate Nest module would need it exported back (a cycle).
 */
export const LOGDUMPER_CONTROLLERS: Type[] = [LogRulesController, LogsController];

export const LOGDUMPER_PROVIDERS: Provider[] = [
  LogDumperCounters,
  LogRulesRepository,
  LogOffsetsRepository,
  LogRulesService,
  LogProcessorService,
  LogIngestService,
  LogSourcesService,
];
