import { Module } from '@nestjs/common';
import { TasksModule } from '../tasks';
import { LogIngestService } from './log-ingest.service';
import { LogOffsetsRepository } from './log-offsets.repository';
import { LogProcessorService } from './log-processor.service';
import { LogRulesController } from './log-rules.controller';
import { LogRulesRepository } from './log-rules.repository';
import { LogRulesService } from './log-rules.service';
import { LogSourcesService } from './log-sources.service';
import { LogDumperCounters } from './logdumper.counters';
import { LogsController } from './logs.controller';

/** The LogDumper: tasks from log records (HTTP ingest, tailed files, Redis streams) through rules. */
@Module({
  imports: [TasksModule],
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
export class LogDumperModule {}
