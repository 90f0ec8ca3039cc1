import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { Metrics } from './metrics';
import { prometheusText } from './prometheus-text';
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
    summary: "this instance's counters, in the Prometheus text format",
    description:
      'Counters of this scheduler process since it started (tasks finished, as relayed to it, timer fires, LogDumper records, group-commit retries): sum them over instances.',
  })
  @ApiOkResponse({ schema: { type: 'string' }, description: 'the Prometheus text format' })
  scrape(): string {
    return prometheusText(this.metrics.all(), this.metrics.gaugeNames());
  }
}
