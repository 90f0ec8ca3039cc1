import { Module, OnModuleInit } from '@nestjs/common';
import { AuthModule, TenantScopes } from '../auth';
import { TaskChangeFeed, TaskStoreModule } from '../task-store';
import { TasksModule } from '../tasks';
import { ApprovalRequests, TopologiesModule } from '../topologies';
import { WorkerHealthWatch, WorkersModule } from '../workers';
import { WebhookAttemptWriter } from './webhook-attempts.writer';
import { WebhookClaims } from './webhook-claims.repository';
import { WebhookEvents } from './webhook-events';
import { WebhookPoster } from './webhook-poster';
import { WebhookRetention } from './webhook-retention';
import { WebhookSecrets } from './webhook-secrets';
import { WebhookSender } from './webhook-sender';
import { TaskDeliveriesController, WebhooksController } from './webhooks.controller';
import { WebhookMessagesRepository } from './webhook-messages.repository';
import { WebhooksRepository } from './webhooks.repository';
import { deliveryNotFound, WebhooksService, webhookNotFound } from './webhooks.service';

/**
 * Webhooks: subscriptions to task events and tasks' `callback_url`s, delivered at least once and
 * in order per (subscription, task), signed on the Standard Webhooks scheme, with a delivery log.
 * Events come from the task store's durable change feed (an outbox in the change's transaction).
 */
@Module({
  imports: [AuthModule, TaskStoreModule, TasksModule, WorkersModule, TopologiesModule],
  controllers: [WebhooksController, TaskDeliveriesController],
  providers: [
    WebhooksRepository,
    WebhookMessagesRepository,
    WebhookClaims,
    WebhookAttemptWriter,
    WebhookSecrets,
    WebhookEvents,
    WebhookPoster,
    WebhookSender,
    WebhookRetention,
    WebhooksService,
  ],
})
export class WebhooksModule implements OnModuleInit {
  constructor(
    private readonly scopes: TenantScopes,
    private readonly feed: TaskChangeFeed,
    private readonly events: WebhookEvents,
    private readonly repo: WebhooksRepository,
    private readonly messages: WebhookMessagesRepository,
    private readonly health: WorkerHealthWatch,
    private readonly approvals: ApprovalRequests,
  ) {}

  onModuleInit(): void {
    this.feed.attach(this.events);
    this.health.listen((m, events) => this.events.workerEvents(m, events));
    this.approvals.listen((m, events) => this.events.approvalEvents(m, events));
    // A subscription of every tenant (no tenant) is no tenant's: closed to tenant keys (404).
    this.scopes.owns(
      'webhook_id',
      async (id) => {
        const w = await this.repo.find(id);
        return w && w.kind === 'subscription' ? (w.tenant ?? '*') : undefined;
      },
      webhookNotFound,
    );
    this.scopes.owns(
      'message_id',
      async (id) => {
        const m = await this.messages.message(id);
        const w = m && (await this.repo.find(m.webhookId));
        return w ? (w.tenant ?? '*') : undefined;
      },
      deliveryNotFound,
    );
  }
}
