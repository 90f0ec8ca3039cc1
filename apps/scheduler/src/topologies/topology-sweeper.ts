import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { LOCK_PROVIDER, Lease, LockProvider } from '@baton/locks';
import { Clock, PeriodicLoop } from '../common';
import { TopologyDriver } from './topology-driver';
import { TopologyRunsRepository } from './topology-runs.repository';

/** How often the sweeper looks. */
const INTERVAL_MS = 1_000;
/** An active run nothing moved for this long is evaluated again (a safety net, not the path). */
const STALE_MS = 60_000;
const BATCH = 100;
const LEASE_TTL_MS = 10_000;

/**
 * Evaluates runs whose wait ends (`wait: {until|seconds}`), and, as a safety net, active runs that
 * nothing moved for a minute. One instance of the fleet at a time (a lease).
 */
@Injectable()
export class TopologySweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('TopologySweeper');
  private readonly loop: PeriodicLoop;
  private lease: Lease | undefined;

  constructor(
    private readonly runs: TopologyRunsRepository,
    private readonly driver: TopologyDriver,
    private readonly clock: Clock,
    @Inject(LOCK_PROVIDER) private readonly locks: LockProvider,
  ) {
    this.loop = new PeriodicLoop(clock, this.logger, INTERVAL_MS, () => this.sweepOnce());
  }

  onApplicationBootstrap(): void {
    this.loop.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.loop.stop();
    await this.lease?.release().catch(() => undefined);
  }

  /** One look (tests call it). */
  async sweepOnce(): Promise<void> {
    if (!this.lease || this.lease.lost)
      this.lease =
        (await this.locks.tryAcquire('topologies:sweeper', {
          ttlMs: LEASE_TTL_MS,
          autoRenew: true,
        })) ?? undefined;
    if (!this.lease) return;
    const now = this.clock.now();
    for (const runId of await this.runs.due(now, now - STALE_MS, BATCH)) {
      await this.runs.touch(runId, now);
      await this.driver.evaluate(runId).catch((err: unknown) => {
        this.logger.error(`run ${runId}: ${err instanceof Error ? err.message : String(err)}`);
      });
    }
  }
}
