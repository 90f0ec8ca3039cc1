import { Global, Module, OnModuleInit } from '@nestjs/common';
import { Metrics } from './metrics';
import { MetricsController } from './metrics.controller';

/** The scheduler's metrics, one registry for every module, and `GET /metrics` to read them. */
@Global()
@Module({ controllers: [MetricsController], providers: [Metrics], exports: [Metrics] })
export class MetricsModule implements OnModuleInit {
  constructor(private readonly metrics: Metrics) {}

  onModuleInit(): void {
    this.metrics.collectProcessMetrics();
  }
}
