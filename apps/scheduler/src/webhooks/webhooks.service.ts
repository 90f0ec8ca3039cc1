import { createHash, randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { ContractErrorCode, ContractException, resolvedUrlProblem } from '@baton/task-contract';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TransactionRunner } from '../database';
import { CreateWebhookDto, UpdateWebhookDto } from './dto/webhook.dto';
import { messageBody, newMessageId, WebhookEvents } from './webhook-events';
import { newSecret, WebhookSecrets } from './webhook-secrets';
import { WebhookSender } from './webhook-sender';
import {
  newWebhook,
  MessageStatus,
  WebhookAttemptModel,
  WebhookEventType,
  WebhookMessageModel,
  WebhookModel,
} from './webhook.model';
import { WebhookMessagesRepository } from './webhook-messages.repository';
import { WebhooksRepository } from './webhooks.repository';

const invalid = (message: string, data: Record<string, unknown>): ContractException =>
  new ContractException(ContractErrorCode.VALIDATION_FAILED, message, data);

export const webhookNotFound = (id: string): ContractException =>
  new ContractException(ContractErrorCode.NOT_FOUND, `webhook ${id} does not exist`, {
    webhook_id: id,
  });

export const deliveryNotFound = (id: string): ContractException =>
  new ContractException(ContractErrorCode.NOT_FOUND, `delivery ${id} does not exist`, {
    message_id: id,
  });

/** Subscriptions, their secrets, their delivery log, redelivery and test pings. */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly repo: WebhooksRepository,
    private readonly messages: WebhookMessagesRepository,
    private readonly secrets: WebhookSecrets,
    private readonly events: WebhookEvents,
    private readonly sender: WebhookSender,
    private readonly tx: TransactionRunner,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  async create(dto: CreateWebhookDto): Promise<WebhookModel> {
    await this.checkUrl(dto.url);
    const labels = checkedLabels(dto.labels ?? {});
    const w = newWebhook(
      {
        webhookId: `wh_${createHash('sha256').update(randomUUID()).digest('base64url').slice(0, 24)}`,
        kind: 'subscription',
        tenant: dto.tenant ?? null,
        url: dto.url,
        events: [...new Set(dto.events)] as WebhookEventType[],
        taskTypes: [...new Set(dto.task_types ?? [])],
        labels,
        description: dto.description ?? '',
        enabled: dto.enabled ?? true,
        secret: newSecret(),
      },
      this.clock.now(),
    );
    await this.repo.insert(w);
    await this.events.refresh();
    return w;
  }

  list(tenant?: string): Promise<WebhookModel[]> {
    return this.repo.list(tenant);
  }

  /** A subscription (callback signers are not subscriptions: 404). */
  async get(webhookId: string): Promise<WebhookModel> {
    const w = await this.repo.find(webhookId);
    if (!w || w.kind !== 'subscription') throw webhookNotFound(webhookId);
    return w;
  }

  async update(webhookId: string, dto: UpdateWebhookDto): Promise<WebhookModel> {
    if (dto.url !== undefined) await this.checkUrl(dto.url);
    const labels = dto.labels === undefined ? undefined : checkedLabels(dto.labels);
    const prev = await this.get(webhookId);
    const enabling = dto.enabled === true && !prev.enabled;
    const next: WebhookModel = {
      ...prev,
      url: dto.url ?? prev.url,
      events: dto.events ? ([...new Set(dto.events)] as WebhookEventType[]) : prev.events,
      taskTypes: dto.task_types ? [...new Set(dto.task_types)] : prev.taskTypes,
      labels: labels ?? prev.labels,
      description: dto.description ?? prev.description,
      enabled: dto.enabled ?? prev.enabled,
      disabledReason: enabling ? null : prev.disabledReason,
      failingSince: enabling ? null : prev.failingSince,
      updatedAt: this.clock.now(),
      version: prev.version + 1,
    };
    if (!(await this.repo.replace(prev, next))) throw conflict(webhookId);
    await this.events.refresh();
    if (enabling) this.sender.nudge();
    return next;
  }

  async remove(webhookId: string): Promise<void> {
    await this.get(webhookId);
    await this.repo.remove(webhookId);
    await this.messages.removeLog(webhookId);
    await this.events.refresh();
  }

  /** A new signing secret (returned once); the old one signs beside it for the overlap. */
  async rotate(webhookId: string): Promise<WebhookModel> {
    const w = await this.get(webhookId);
    const next = await this.secrets.rotate(w);
    if (!next) throw conflict(webhookId);
    return next;
  }

  /** A new secret for the tenant's callbacks (returned once; the old one signs for the overlap). */
  async rotateCallbackSecret(tenant: string): Promise<WebhookModel> {
    const w = await this.secrets.callbackSigner(tenant);
    const current = (await this.repo.find(w.webhookId)) as WebhookModel;
    const next = await this.secrets.rotate(current);
    if (!next) throw conflict(w.webhookId);
    return next;
  }

  /** A `webhook.test` message to the subscription, delivered like any other. */
  async ping(webhookId: string): Promise<WebhookMessageModel> {
    const w = await this.get(webhookId);
    const now = this.clock.now();
    const messageId = newMessageId();
    const body = messageBody('webhook.test', now, {
      webhook_id: w.webhookId,
      message: 'a test ping from Baton',
    });
    await this.tx.run((m) =>
      this.messages.insertMessages(m, [
        {
          messageId,
          webhookId: w.webhookId,
          eventType: 'webhook.test',
          tenant: w.tenant ?? '',
          taskId: null,
          url: null,
          body,
          seq: 0,
          createdAt: now,
        },
      ]),
    );
    this.sender.nudge();
    return (await this.messages.message(messageId)) as WebhookMessageModel;
  }

  /**
   * Messages of a subscription (older than the message `before`, when given) or of a task, newest
   * first, with their attempts. A `before` that is not a message of this subscription is a 404.
   */
  async deliveries(
    where: { webhookId: string; before?: string } | { taskId: string },
    status: MessageStatus | undefined,
    limit: number,
  ): Promise<[WebhookMessageModel, WebhookAttemptModel[]][]> {
    let after: WebhookMessageModel | undefined;
    if ('webhookId' in where) {
      await this.get(where.webhookId);
      if (where.before !== undefined) {
        after = await this.messages.message(where.before);
        if (!after || after.webhookId !== where.webhookId) throw deliveryNotFound(where.before);
      }
    }
    const messages =
      'webhookId' in where
        ? await this.messages.messagesOf(where.webhookId, status, limit, after)
        : await this.messages.messagesOfTask(where.taskId, status, limit);
    const attempts = await this.messages.attemptsOf(messages.map((m) => m.messageId));
    return messages.map((m) => [m, attempts.get(m.messageId) ?? []]);
  }

  /** Sends one message again (same `webhook-id`), whatever its state. */
  async redeliverOne(webhookId: string, messageId: string): Promise<number> {
    await this.get(webhookId);
    const msg = await this.messages.message(messageId);
    if (!msg || msg.webhookId !== webhookId) throw deliveryNotFound(messageId);
    const n = await this.messages.redeliver({ messageId }, this.clock.now());
    this.sender.nudge();
    return n;
  }

  /** Sends again every message of the subscription given up since `since`. */
  async redeliverFailed(webhookId: string, since: number): Promise<number> {
    await this.get(webhookId);
    const n = await this.messages.redeliver({ webhookId, since }, this.clock.now());
    this.sender.nudge();
    return n;
  }

  private async checkUrl(url: string): Promise<void> {
    const problem = await resolvedUrlProblem(url, {
      networks: this.config.outgoing.webhooks.allowNetworks,
      hosts: this.config.outgoing.webhooks.allowHosts,
    });
    if (problem) throw invalid(`url ${problem}`, { url });
  }
}

const conflict = (webhookId: string): ContractException =>
  new ContractException(
    ContractErrorCode.VERSION_CONFLICT,
    `webhook ${webhookId} changed meanwhile; read it and try again`,
    { webhook_id: webhookId },
  );

function checkedLabels(labels: Record<string, unknown>): Record<string, string> {
  const entries = Object.entries(labels);
  if (entries.length > 20) throw invalid('labels may hold at most 20 entries', { labels });
  for (const [k, v] of entries)
    if (typeof v !== 'string' || k.length === 0 || k.length > 100 || v.length > 200)
      throw invalid(
        'each label must be a name (1-100 characters) and a string value (at most 200)',
        {
          label: k,
        },
      );
  return labels as Record<string, string>;
}
