import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { TransactionRunner } from '../database';
import { WebhookEntity } from './webhook.entity';
import { WebhookEventType, WebhookKind, WebhookModel } from './webhook.model';

const toModel = (e: WebhookEntity): WebhookModel => ({
  webhookId: e.webhook_id,
  kind: e.kind as WebhookKind,
  tenant: e.tenant,
  url: e.url,
  events: e.events as WebhookEventType[],
  taskTypes: e.task_types,
  labels: e.labels,
  description: e.description,
  enabled: Boolean(e.enabled),
  secret: e.secret,
  previousSecret: e.previous_secret,
  previousSecretUntil: e.previous_secret_until === null ? null : Number(e.previous_secret_until),
  disabledReason: e.disabled_reason,
  failingSince: e.failing_since === null ? null : Number(e.failing_since),
  createdAt: Number(e.created_at),
  updatedAt: Number(e.updated_at),
  version: e.version,
});

const toEntity = (m: WebhookModel): WebhookEntity => ({
  webhook_id: m.webhookId,
  kind: m.kind,
  tenant: m.tenant,
  url: m.url,
  events: m.events,
  task_types: m.taskTypes,
  labels: m.labels,
  description: m.description,
  enabled: m.enabled,
  secret: m.secret,
  previous_secret: m.previousSecret,
  previous_secret_until: m.previousSecretUntil,
  disabled_reason: m.disabledReason,
  failing_since: m.failingSince,
  created_at: m.createdAt,
  updated_at: m.updatedAt,
  version: m.version,
});

/** Storage of subscriptions and callback signers. */
@Injectable()
export class WebhooksRepository {
  constructor(private readonly tx: TransactionRunner) {}

  /** Subscriptions (not callback signers), of one tenant when given, oldest first. */
  async list(tenant?: string): Promise<WebhookModel[]> {
    const rows = await this.tx.single((m) =>
      m.find(WebhookEntity, {
        where: { kind: 'subscription', ...(tenant !== undefined ? { tenant } : {}) },
        order: { created_at: 'ASC', webhook_id: 'ASC' },
      }),
    );
    return rows.map(toModel);
  }

  async enabledSubscriptions(): Promise<WebhookModel[]> {
    const rows = await this.tx.single((m) =>
      m.find(WebhookEntity, { where: { kind: 'subscription', enabled: true } }),
    );
    return rows.map(toModel);
  }

  async find(webhookId: string): Promise<WebhookModel | undefined> {
    const e = await this.tx.single((m) => m.findOneBy(WebhookEntity, { webhook_id: webhookId }));
    return e ? toModel(e) : undefined;
  }

  async findMany(ids: readonly string[]): Promise<Map<string, WebhookModel>> {
    if (ids.length === 0) return new Map();
    const rows = await this.tx.single((m) =>
      m
        .createQueryBuilder(WebhookEntity, 'w')
        .where('w.webhook_id IN (:...ids)', { ids: [...ids] })
        .getMany(),
    );
    return new Map(rows.map((e) => [e.webhook_id, toModel(e)]));
  }

  async insert(m: WebhookModel): Promise<void> {
    await this.tx.single((em) => em.insert(WebhookEntity, toEntity(m)));
  }

  /** A callback signer, in the caller's transaction, unless one exists already (it stays). */
  async insertSigner(m: EntityManager, w: WebhookModel): Promise<void> {
    await m
      .createQueryBuilder()
      .insert()
      .into(WebhookEntity)
      .values(toEntity(w))
      .orIgnore()
      .execute();
  }

  /**
   * Writes `next` if the stored row is still at `prev.version`; false when another write won. The
   * failing streak is the sender's: left as it is, unless the subscription is enabled again.
   */
  async replace(prev: WebhookModel, next: WebhookModel): Promise<boolean> {
    const { failing_since: streak, ...row } = toEntity(next);
    const restart = next.enabled && !prev.enabled;
    const r = await this.tx.single((em) =>
      em.update(
        WebhookEntity,
        { webhook_id: prev.webhookId, version: prev.version },
        { ...row, ...(restart ? { failing_since: streak } : {}), version: prev.version + 1 },
      ),
    );
    return (r.affected ?? 0) > 0;
  }

  /** Deletes the webhook's row (WebhookMessagesRepository.removeLog deletes its log). */
  async remove(webhookId: string): Promise<boolean> {
    const r = await this.tx.single((m) => m.delete(WebhookEntity, { webhook_id: webhookId }));
    return (r.affected ?? 0) > 0;
  }

  /** Every webhook's id, subscriptions and callback signers, enabled or not. */
  async ids(): Promise<string[]> {
    const rows = await this.tx.single((m) =>
      m.find(WebhookEntity, { select: { webhook_id: true } }),
    );
    return rows.map((r) => r.webhook_id);
  }

  /** Every tenant's callback signer. */
  async callbackSigners(): Promise<WebhookModel[]> {
    const rows = await this.tx.single((m) =>
      m.find(WebhookEntity, { where: { kind: 'callback' } }),
    );
    return rows.map(toModel);
  }
}
