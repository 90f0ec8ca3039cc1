import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { BackendHealth } from './backend-health';
import { HealthController } from './health.controller';

/** Liveness and readiness for probes: `/health/live`, `/health/ready` (and `/health`). */
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController],
  providers: [BackendHealth],
})
export class HealthModule {}
