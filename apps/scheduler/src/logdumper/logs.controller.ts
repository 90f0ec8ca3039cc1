import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Envelope, ok } from '@baton/task-contract';
import { IngestLogsDto, IngestResultDto, LogStatsDto } from './dto/ingest.dto';
import { LogIngestService } from './log-ingest.service';
import { LogDumperCounters } from './logdumper.counters';
import { Access, AllTenants, TenantFields } from '../auth';

@ApiTags('logs')
@Access('operate')
@Controller('v1/logs')
export class LogsController {
  constructor(
    private readonly ingestion: LogIngestService,
    private readonly counters: LogDumperCounters,
  ) {}

  @Post()
  @TenantFields('body.tenant')
  @HttpCode(200)
  @ApiOperation({
    summary: 'ingest a batch of log records (up to 1000) from one source',
    description:
      'Every record carries its position in the source; the task a rule makes from it is keyed by (source, position, rule), ' +
      'so sending the same batch again creates nothing new (counted as duplicates). A malformed record is dropped and listed ' +
      'in errors while the rest of the batch is processed; a malformed request is refused with 400.',
  })
  @ApiOkResponse({ type: IngestResultDto })
  async ingest(@Body() dto: IngestLogsDto): Promise<Envelope<IngestResultDto>> {
    return ok(await this.ingestion.ingest(dto));
  }

  @Access('read')
  @Get('stats')
  @AllTenants()
  @ApiOperation({ summary: 'LogDumper counters of this instance, per source' })
  @ApiOkResponse({ type: LogStatsDto })
  stats(): Envelope<LogStatsDto> {
    return ok(this.counters.snapshot());
  }
}
