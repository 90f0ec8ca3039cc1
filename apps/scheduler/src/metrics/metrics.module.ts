import { Global, Module } from '@nestjs/common';
import { Metrics } from './metrics';

/** The scheduler's counters, one registry for every module. */
@Global()
@Module({ providers: [Metrics], exports: [Metrics] })
export class MetricsModule {}
