import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Clock } from './clock';

/**
 * Where the process is in its life: started, ready (taking work), draining (SIGTERM came). The
 * readiness probe answers 503 from the moment draining begins, so a load balancer stops sending
 * new requests while the ones under way are answered and the work in hand is handed back.
 */
@Injectable()
export class Lifecycle implements OnModuleDestroy {
  private readonly logger = new Logger('Lifecycle');
  /** When the process started (its own clock, for the start-up figures). */
  readonly startedAt: number;
  private drainingSince: number | undefined;

  constructor(private readonly clock: Clock) {
    this.startedAt = clock.now() - Math.round(process.uptime() * 1000);
  }

  get draining(): boolean {
    return this.drainingSince !== undefined;
  }

  /** The first of the shutdown hooks: nothing new is taken from here on. */
  onModuleDestroy(): void {
    this.drainingSince ??= this.clock.now();
    this.logger.log('shutting down: not ready; finishing the work in hand');
  }

  /** Milliseconds since the process started. */
  sinceStart(): number {
    return this.clock.now() - this.startedAt;
  }
}
