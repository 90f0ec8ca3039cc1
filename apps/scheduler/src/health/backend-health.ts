import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { LOCK_PROVIDER, LockProvider } from '@baton/locks';
import { DataSource } from 'typeorm';
import { Clock, Timer } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { LANES, QueueLanes } from '../queue';
import { BackendGate } from './backend-gate';
import { WatchedBackend } from './backend-watch';

/** How long one backend may take to answer a readiness probe before it counts as down. */
const PROBE_TIMEOUT_MS = 2000;

function within<T>(clock: Clock, ms: number, work: Promise<T>): Promise<T> {
  let timer: Timer | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = clock.setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clock.clearTimeout(timer));
}

/**
 * Whether each backend the scheduler needs answers now: the database (and its migrations are
 * all applied), the queue, the lock backend. Each probe is a real round trip, bounded in time,
 * so a backend that went away shows within a probe's timeout.
 */
@Injectable()
export class BackendHealth {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly db: DataSource,
    private readonly lanes: QueueLanes,
    @Inject(LOCK_PROVIDER) private readonly lockProvider: LockProvider,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly clock: Clock,
    private readonly gate: BackendGate,
  ) {}

  database(): Promise<HealthIndicatorResult> {
    return this.probe('database', async () => {
      this.throwWhenDown('database');
      await this.db.query('SELECT 1');
      if (await this.db.showMigrations()) throw new Error('migrations are pending');
      return { type: this.config.database.type };
    });
  }

  queue(): Promise<HealthIndicatorResult> {
    return this.probe('queue', async () => {
      this.throwWhenDown('queue');
      const sizes = await Promise.all(LANES.map((l) => this.lanes.lane(l).size()));
      return {
        driver: this.config.queue.driver,
        pending: sizes.reduce((sum, s) => sum + s.pending, 0),
      };
    });
  }

  locks(): Promise<HealthIndicatorResult> {
    return this.probe('locks', async () => {
      // A lease on a key of this instance's own: taken and given back, a round trip each.
      const lease = await this.lockProvider.tryAcquire(`health:${this.config.instanceId}`, {
        ttlMs: 5000,
      });
      await lease?.release();
      return { driver: this.lockProvider.driver };
    });
  }

  /** A backend the watch found down is down now, without waiting for a probe of its own. */
  private throwWhenDown(backend: WatchedBackend): void {
    const outage = this.gate.outage(backend);
    if (outage)
      throw new Error(
        `no answer for ${((this.clock.now() - outage.since) / 1000).toFixed(1)} s: ${outage.reason}`,
      );
  }

  private async probe(
    key: string,
    check: () => Promise<Record<string, unknown>>,
  ): Promise<HealthIndicatorResult> {
    const session = this.indicators.check(key);
    try {
      return session.up(await within(this.clock, PROBE_TIMEOUT_MS, check()));
    } catch (err) {
      return session.down({ message: err instanceof Error ? err.message : String(err) });
    }
  }
}
