import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { Metrics } from './metrics';
import { Access } from '../auth';

@ApiTags('metrics')
@Access('public')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: Metrics) {}

  @Get()
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  @ApiProduces('text/plain')
  @ApiOperation({
    summary: "this instance's metrics, in the Prometheus text format",
    description:
      'Counters and histograms of this scheduler process since it started (task transitions, worker calls, claims, locks, timer fires, LogDumper records, webhook deliveries): sum them over instances. ' +
      'Gauges read from the database (`baton_tasks`, `baton_task_backlog`, `baton_workers`) are the same on every instance: take their max. Process metrics (`process_*`, `nodejs_*`) too. ' +
      'Each family says which it is in its HELP line.',
  })
  @ApiOkResponse({ schema: { type: 'string' }, description: 'the Prometheus text format' })
  scrape(): Promise<string> {
    return this.metrics.scrape();
  }
}
