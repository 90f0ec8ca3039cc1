import { createHash, createHmac, createSecretKey, KeyObject, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { isUniqueViolation } from '../task-store';
import { newWebhook, WebhookModel } from './webhook.model';
import { WebhooksRepository } from './webhooks.repository';

/** A new signing secret in the Standard Webhooks form: `whsec_` and 32 random bytes in base64. */
export const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** Keys made from secrets so far: made once (a raw key given to createHmac is made each time). */
const keys = new Map<string, KeyObject>();

/** A secret's key: the base64 after `whsec_`. */
function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    // Rotated-out secrets are never asked for again: a long-lived process forgets them all now
    // and then, and makes again the few still in use.
    if (keys.size >= 10_000) keys.clear();
    key = createSecretKey(
      Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64'),
    );
    keys.set(secret, key);
  }
  return key;
}

/**
 * Signing secrets: each subscription's own, and each tenant's for the `callback_url`s of its tasks
 * (kept as a webhook of kind `callback`, made when first needed). A rotated-out secret keeps
 * signing beside the new one for BATON_WEBHOOK_SECRET_OVERLAP (24 h), so receivers can switch.
 */
@Injectable()
export class WebhookSecrets {
  /** Callback signers by tenant (their ids never change; their secrets are read when sending). */
  private readonly signers = new Map<string, WebhookModel>();

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  /**
   * The `webhook-signature` header: `v1,<sig>` for the secret, and for the previous one while
   * valid. The Standard Webhooks signature (the HMAC-SHA256 of `id.timestamp.body` under the
   * secret's bytes, in base64), made with node's crypto and a key kept per secret: six times
   * cheaper than the library's plain-JavaScript SHA-256, at a thousand deliveries a second.
   */
  signature(w: WebhookModel, messageId: string, at: Date, body: string): string {
    const secrets = [w.secret];
    if (w.previousSecret && (w.previousSecretUntil ?? 0) > at.getTime())
      secrets.push(w.previousSecret);
    const signed = `${messageId}.${Math.floor(at.getTime() / 1000)}.${body}`;
    return secrets
      .map((s) => `v1,${createHmac('sha256', keyOf(s)).update(signed).digest('base64')}`)
      .join(' ');
  }

  /**
   * Makes the tenant's callback signer in the caller's transaction unless it exists (the first
   * insert wins; its secret is the one). Skipped for a signer known to be stored.
   */
  async ensureSigner(m: EntityManager, tenant: string): Promise<void> {
    if (this.signers.has(tenant)) return;
    await this.repo.insertSigner(m, this.newSigner(tenant));
  }

  /** Signers read from the database (committed): no need to make them again. */
  remember(signers: readonly WebhookModel[]): void {
    for (const w of signers) if (w.tenant !== null) this.signers.set(w.tenant, w);
  }

  /** The webhook that signs the callbacks of a tenant's tasks, made on first use. */
  async callbackSigner(tenant: string): Promise<WebhookModel> {
    const known = this.signers.get(tenant);
    if (known) return known;
    const id = callbackSignerId(tenant);
    let w = await this.repo.find(id);
    if (!w) {
      w = this.newSigner(tenant);
      try {
        await this.repo.insert(w);
      } catch (err) {
        // Another instance made it first.
        if (!isUniqueViolation(err)) throw err;
        w = (await this.repo.find(id)) as WebhookModel;
      }
    }
    this.signers.set(tenant, w);
    return w;
  }

  private newSigner(tenant: string): WebhookModel {
    return newWebhook(
      {
        webhookId: callbackSignerId(tenant),
        kind: 'callback',
        tenant,
        url: null,
        events: ['task.finished'],
        description: `signs the callback_url calls of tenant ${tenant}`,
        secret: newSecret(),
      },
      this.clock.now(),
    );
  }

  /**
   * A new secret for the webhook (shown once, by the caller): the old one keeps signing for the
   * overlap. Undefined when another write changed the webhook meanwhile.
   */
  async rotate(w: WebhookModel): Promise<WebhookModel | undefined> {
    const now = this.clock.now();
    const next: WebhookModel = {
      ...w,
      secret: newSecret(),
      previousSecret: this.config.outgoing.webhooks.secretOverlapMs > 0 ? w.secret : null,
      previousSecretUntil:
        this.config.outgoing.webhooks.secretOverlapMs > 0
          ? now + this.config.outgoing.webhooks.secretOverlapMs
          : null,
      updatedAt: now,
      version: w.version + 1,
    };
    return (await this.repo.replace(w, next)) ? next : undefined;
  }
}

/** The id of a tenant's callback signer: derived from the tenant, so every instance agrees. */
export const callbackSignerId = (tenant: string): string =>
  `whcb_${createHash('sha256').update(tenant).digest('base64url').slice(0, 32)}`;
