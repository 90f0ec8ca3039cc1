import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { BackendHealth } from './backend-health';
import { BackendMetrics } from './backend-metrics';
import { HealthController } from './health.controller';

/**
 * Liveness and readiness for probes: `/health/live`, `/health/ready` (and `/health`); and the
 * backends' metrics (locks, queue depth).
 */
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController],
  providers: [BackendHealth, BackendMetrics],
})
export class HealthModule {}
