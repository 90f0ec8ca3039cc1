import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { LOCK_PROVIDER, LockProvider } from '@baton/locks';
import { Metrics, cachedFor } from '../metrics';
import { LANES, QueueLanes } from '../queue';

/**
 * Metrics of the backends: every lock acquire and release, timed by driver
 * (`baton_lock_acquire_seconds`, `baton_lock_hold_seconds`, `baton_lock_contention_total`), and
 * the depth of each queue lane, asked of the queue when `/metrics` is scraped.
 */
@Injectable()
export class BackendMetrics implements OnModuleInit {
  constructor(
    private readonly metrics: Metrics,
    private readonly lanes: QueueLanes,
    @Inject(LOCK_PROVIDER) private readonly locks: LockProvider,
  ) {}

  onModuleInit(): void {
    const m = this.metrics;
    this.locks.observe({
      acquired: (driver, result, seconds) => {
        m.observe('baton_lock_acquire_seconds', { driver, result }, seconds);
        if (result === 'busy') m.inc('baton_lock_contention_total', { driver });
      },
      released: (driver, seconds) => m.observe('baton_lock_hold_seconds', { driver }, seconds),
    });
    m.source(
      'baton_queue_depth',
      cachedFor(1000, () =>
        Promise.all(
          LANES.map(async (lane) => ({
            labels: { lane },
            value: (await this.lanes.lane(lane).size()).pending,
          })),
        ),
      ),
    );
  }
}
