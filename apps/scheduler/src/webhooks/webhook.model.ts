/** The events a subscription may ask for. */
export const WEBHOOK_EVENTS = [
  'task.created',
  'task.status_changed',
  'task.succeeded',
  'task.failed',
  'task.cancelled',
  'task.finished',
  'task.timed_out',
  'topology.run.finished',
  'topology.run.failed',
  'topology.approval_requested',
  'worker.unhealthy',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number] | 'webhook.test';

export type WebhookKind = 'subscription' | 'callback';

export interface WebhookModel {
  webhookId: string;
  kind: WebhookKind;
  /** The only tenant whose events it hears; null: every tenant's. */
  tenant: string | null;
  /** Null for a tenant's callback signer (each message carries its task's URL). */
  url: string | null;
  events: WebhookEventType[];
  /** Empty: every task type. */
  taskTypes: string[];
  /** Every one must be on the task. */
  labels: Record<string, string>;
  description: string;
  enabled: boolean;
  secret: string;
  previousSecret: string | null;
  previousSecretUntil: number | null;
  disabledReason: string | null;
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
  version: number;
}

/** A webhook as first stored: enabled, no streak, no previous secret, version 1. */
export function newWebhook(
  w: Pick<WebhookModel, 'webhookId' | 'kind' | 'tenant' | 'url' | 'events' | 'secret'> &
    Partial<Pick<WebhookModel, 'taskTypes' | 'labels' | 'description' | 'enabled'>>,
  now: number,
): WebhookModel {
  return {
    taskTypes: [],
    labels: {},
    description: '',
    enabled: true,
    ...w,
    previousSecret: null,
    previousSecretUntil: null,
    disabledReason: null,
    failingSince: null,
    createdAt: now,
    updatedAt: now,
    version: 1,
  };
}

export type MessageStatus = 'pending' | 'delivered' | 'failed';

export interface WebhookAttemptModel {
  attempt: number;
  at: number;
  statusCode: number | null;
  latencyMs: number;
  response: string | null;
  error: string | null;
  /** The instance that made it (null: recorded before instances said). */
  sentBy: string | null;
}

export interface WebhookMessageModel {
  messageId: string;
  webhookId: string;
  eventType: string;
  tenant: string;
  taskId: string | null;
  url: string | null;
  body: string;
  seq: number;
  status: MessageStatus;
  attempts: number;
  nextAt: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: number;
  finishedAt: number | null;
}

/** A message as it is first written. */
export type NewWebhookMessage = Pick<
  WebhookMessageModel,
  'messageId' | 'webhookId' | 'eventType' | 'tenant' | 'taskId' | 'url' | 'body' | 'seq'
> & { createdAt: number };
