import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { Clock, PeriodicLoop } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { Metrics } from '../metrics';
import { WebhookMessagesRepository } from './webhook-messages.repository';

/** Purges at most this many messages (with their attempts) per statement. */
const BATCH = 500;

/**
 * Keeps the delivery log to BATON_WEBHOOK_LOG_RETENTION (7 days from a message's creation):
 * delivered and given-up messages, with their attempts, are deleted in small batches. Also keeps the queue-depth gauge.
 */
@Injectable()
export class WebhookRetention implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly loop: PeriodicLoop;

  constructor(
    private readonly messages: WebhookMessagesRepository,
    private readonly metrics: Metrics,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {
    this.loop = new PeriodicLoop(this.clock, new Logger('WebhookRetention'), 60_000, () =>
      this.passOnce(),
    );
  }

  onApplicationBootstrap(): void {
    this.loop.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.loop.stop();
  }

  /** One pass (tests call it): the purge, then the depth. */
  async passOnce(): Promise<number> {
    const before = this.clock.now() - this.config.outgoing.webhooks.logRetentionMs;
    const purged = await this.messages.purge(before, BATCH);
    this.metrics.set('baton_webhook_queue_depth', {}, await this.messages.depth());
    return purged;
  }
}
