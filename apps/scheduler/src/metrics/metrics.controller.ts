import { timingSafeEqual } from 'node:crypto';
import { Controller, Get, Header, Headers, Inject } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { ApiErrors } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { Metrics } from './metrics';
import { Access } from '../auth';

@ApiTags('metrics')
@Access('public')
@Controller('metrics')
export class MetricsController {
  private readonly token?: Buffer;

  constructor(
    private readonly metrics: Metrics,
    @Inject(SCHEDULER_CONFIG) config: SchedulerConfig,
  ) {
    const token = config.apiAuth.metricsToken;
    this.token = token === undefined ? undefined : Buffer.from(`Bearer ${token}`);
  }

  @Get()
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  @ApiProduces('text/plain')
  @ApiOperation({
    summary: "this instance's metrics, in the Prometheus text format",
    description:
      'Counters and histograms of this scheduler process since it started (task transitions, worker calls, claims, locks, timer fires, LogDumper records, webhook deliveries): sum them over instances. ' +
      'Gauges read from the database (`baton_tasks`, `baton_task_backlog`, `baton_workers`) are the same on every instance: take their max. Process metrics (`process_*`, `nodejs_*`) too. ' +
      'Each family says which it is in its HELP line. ' +
      'Open like the probes, unless `BATON_METRICS_TOKEN` is set: then only `Authorization: Bearer <token>` is answered (API keys are not taken here).',
  })
  @ApiOkResponse({ schema: { type: 'string' }, description: 'the Prometheus text format' })
  @ApiErrors(ContractErrorCode.UNAUTHENTICATED)
  scrape(@Headers('authorization') authorization?: string): Promise<string> {
    if (this.token) {
      const given = Buffer.from(authorization ?? '');
      if (given.length !== this.token.length || !timingSafeEqual(given, this.token)) {
        throw new ContractException(
          ContractErrorCode.UNAUTHENTICATED,
          '/metrics takes the scrape token (BATON_METRICS_TOKEN) as Authorization: Bearer <token>',
        );
      }
    }
    return this.metrics.scrape();
  }
}
