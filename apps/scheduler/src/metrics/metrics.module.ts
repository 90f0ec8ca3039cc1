import { Global, Module } from '@nestjs/common';
import { Metrics } from './metrics';
import { MetricsController } from './metrics.controller';

/** The scheduler's counters, one registry for every module, and `GET /metrics` to read them. */
@Global()
@Module({ controllers: [MetricsController], providers: [Metrics], exports: [Metrics] })
export class MetricsModule {}
