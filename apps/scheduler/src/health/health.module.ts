import { Global, Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { BackendGate, BackendGateInterceptor } from './backend-gate';
import { BackendHealth } from './backend-health';
import { BackendMetrics } from './backend-metrics';
import { HealthController } from './health.controller';

/**
 * Liveness and readiness for probes: `/health/live`, `/health/ready` (and `/health`); the
 * backends' metrics (locks, queue depth); and the watch on the shared backends that makes the API
 * refuse at once while one is down (BackendGate, for every module).
 */
@Global()
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController],
  providers: [
    BackendHealth,
    BackendMetrics,
    BackendGate,
    { provide: APP_INTERCEPTOR, useClass: BackendGateInterceptor },
  ],
  exports: [BackendGate],
})
export class HealthModule {}
