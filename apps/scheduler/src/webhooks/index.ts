import { WebhookEntity } from './webhook.entity';
import { WebhookAttemptEntity, WebhookMessageEntity } from './webhook-message.entity';

export * from './webhooks.module';

/** The tables this module owns, for the data source. */
export const WEBHOOKS_ENTITIES = [WebhookEntity, WebhookMessageEntity, WebhookAttemptEntity];
