import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsISO8601,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
} from 'class-validator';
import { Type } from 'class-transformer';
import { TASK_TYPE_PATTERN } from '@baton/task-contract';
import { TENANT_PATTERN } from '../../common';
import {
  WEBHOOK_EVENTS,
  WebhookAttemptModel,
  WebhookMessageModel,
  WebhookModel,
} from '../webhook.model';

const EVENTS_DOC =
  'the events to hear: `task.created`, `task.status_changed` (every move), `task.succeeded`, `task.failed` (final failure or rollback), `task.cancelled` (stopped because someone asked), `task.finished` (any final outcome), `task.timed_out` (a deadline, heartbeat or queue timeout failed an attempt), `topology.run.finished` and `topology.run.failed` (a topology run ended; `data` is its centre task, whose `task_id` is the run id), `topology.approval_requested` (an approval node began to wait for a person; `data` says which run and node, what is asked, of whom, until when), `worker.unhealthy`';
const URL_DOC =
  'where to POST: http or https, and not loopback, link-local, private or otherwise internal (checked on the addresses the name resolves to, at save and at each send) unless BATON_WEBHOOK_ALLOW allows it';
const LABELS_DOC = 'only tasks carrying every one of these labels (same value)';

/** Body of `POST /v1/webhooks`. */
export class CreateWebhookDto {
  @ApiProperty({
    maxLength: 2048,
    description: URL_DOC,
    example: 'https://hooks.example.com/baton',
  })
  @IsString()
  @Length(1, 2048)
  url!: string;

  @ApiProperty({ type: [String], enum: WEBHOOK_EVENTS, description: EVENTS_DOC })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(WEBHOOK_EVENTS.length)
  @IsIn(WEBHOOK_EVENTS, { each: true })
  events!: string[];

  @ApiPropertyOptional({
    type: [String],
    description: 'only tasks of these types (none: every type)',
    default: [],
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @Matches(TASK_TYPE_PATTERN, { each: true, message: 'each task type must be a task type name' })
  task_types?: string[];

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string' },
    description: LABELS_DOC,
    default: {},
  })
  @IsOptional()
  @IsObject()
  labels?: Record<string, string>;

  @ApiPropertyOptional({
    pattern: TENANT_PATTERN.source,
    description:
      "only this tenant's tasks; without it, every tenant's (keys of no tenant). A key of one tenant: always its own. It cannot change later",
  })
  @IsOptional()
  @Matches(TENANT_PATTERN, { message: 'tenant must be a lower-case name' })
  tenant?: string;

  @ApiPropertyOptional({ maxLength: 500, default: '' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;

  @ApiPropertyOptional({ default: true })
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;
}

/** Body of `PATCH /v1/webhooks/{webhook_id}`: any field but the tenant; `enabled` switches it. */
export class UpdateWebhookDto {
  @ApiPropertyOptional({ maxLength: 2048, description: URL_DOC })
  @IsOptional()
  @IsString()
  @Length(1, 2048)
  url?: string;

  @ApiPropertyOptional({ type: [String], enum: WEBHOOK_EVENTS, description: EVENTS_DOC })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(WEBHOOK_EVENTS.length)
  @IsIn(WEBHOOK_EVENTS, { each: true })
  events?: string[];

  @ApiPropertyOptional({
    type: [String],
    description: 'only tasks of these types (none: every type)',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @Matches(TASK_TYPE_PATTERN, { each: true, message: 'each task type must be a task type name' })
  task_types?: string[];

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string' },
    description: LABELS_DOC,
  })
  @IsOptional()
  @IsObject()
  labels?: Record<string, string>;

  @ApiPropertyOptional({ maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;

  @ApiPropertyOptional({
    description:
      'false stops deliveries (they wait); true starts them again and clears the failing streak',
  })
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;
}

/** A subscription as the API shows it: never its secret. */
export class WebhookDto {
  @ApiProperty() webhook_id!: string;
  @ApiProperty() url!: string;
  @ApiProperty({ type: [String], enum: WEBHOOK_EVENTS }) events!: string[];
  @ApiProperty({ type: [String] }) task_types!: string[];
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) labels!: Record<
    string,
    string
  >;
  @ApiProperty({ nullable: true, type: String, description: 'null: every tenant' }) tenant!:
    string | null;
  @ApiProperty() description!: string;
  @ApiProperty() enabled!: boolean;
  @ApiProperty({ nullable: true, type: String, description: 'why Baton disabled it' })
  disabled_reason!: string | null;
  @ApiProperty({
    nullable: true,
    type: String,
    format: 'date-time',
    description: 'since when every delivery failed; null while deliveries succeed',
  })
  failing_since!: string | null;
  @ApiProperty({
    nullable: true,
    type: String,
    format: 'date-time',
    description: 'until when the previous secret still signs (after a rotation)',
  })
  previous_secret_until!: string | null;
  @ApiProperty({ type: String, format: 'date-time' }) created_at!: string;
  @ApiProperty({ type: String, format: 'date-time' }) updated_at!: string;
}

/** A subscription with its signing secret: the answer of a create or a rotation, and only those. */
export class WebhookWithSecretDto extends WebhookDto {
  @ApiProperty({
    description:
      'the signing secret (`whsec_...`, Standard Webhooks): shown this once; keep it to verify `webhook-signature`',
  })
  secret!: string;
}

/** The answer of `POST /v1/webhooks/callback-secret`. */
export class CallbackSecretDto {
  @ApiProperty() tenant!: string;
  @ApiProperty({
    description:
      "the secret that signs the callback_url calls of the tenant's tasks (shown this once); the previous one signs too until previous_secret_until",
  })
  secret!: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' })
  previous_secret_until!: string | null;
}

export class WebhookAttemptDto {
  @ApiProperty() attempt!: number;
  @ApiProperty({ type: String, format: 'date-time' }) at!: string;
  @ApiProperty({ nullable: true, type: Number, description: 'the HTTP status; null: no answer' })
  status_code!: number | null;
  @ApiProperty() latency_ms!: number;
  @ApiProperty({ nullable: true, type: String, description: 'the first 1 KiB of the answer' })
  response!: string | null;
  @ApiProperty({ nullable: true, type: String }) error!: string | null;
  @ApiProperty({
    nullable: true,
    type: String,
    description: 'the scheduler instance that made the attempt (BATON_INSTANCE_ID)',
  })
  sent_by!: string | null;
}

/** One message (an event for one subscription or callback) and its attempts. */
export class WebhookDeliveryDto {
  @ApiProperty({ description: 'the `webhook-id` header, the same on every attempt' })
  message_id!: string;
  @ApiProperty() webhook_id!: string;
  @ApiProperty() event_type!: string;
  @ApiProperty({ nullable: true, type: String }) task_id!: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'a callback_url (callbacks only)' })
  url!: string | null;
  @ApiProperty({ enum: ['pending', 'delivered', 'failed'] }) status!: string;
  @ApiProperty() attempts!: number;
  @ApiProperty({
    type: String,
    format: 'date-time',
    description: 'when it is tried next (pending)',
  })
  next_attempt_at!: string;
  @ApiProperty({ type: String, format: 'date-time' }) created_at!: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) finished_at!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'the body sent' })
  payload!: unknown;
  @ApiProperty({ type: [WebhookAttemptDto] }) attempt_log!: WebhookAttemptDto[];
}

/** Query of the delivery lists. */
export class DeliveriesQuery {
  @ApiPropertyOptional({ enum: ['pending', 'delivered', 'failed'] })
  @IsOptional()
  @IsIn(['pending', 'delivered', 'failed'])
  status?: 'pending' | 'delivered' | 'failed';

  @ApiPropertyOptional({ minimum: 1, maximum: 500, default: 50 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;
}

/** Body of `POST /v1/webhooks/{webhook_id}/redeliver`. */
export class RedeliverDto {
  @ApiProperty({
    type: String,
    format: 'date-time',
    description: 'every message given up since this time is sent again',
  })
  @IsISO8601({ strict: true })
  since!: string;
}

/** Answer of a redelivery. */
export class RedeliveredDto {
  @ApiProperty({ description: 'messages queued to be sent again' }) redelivered!: number;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function toWebhookDto(w: WebhookModel): WebhookDto {
  return {
    webhook_id: w.webhookId,
    url: w.url ?? '',
    events: w.events,
    task_types: w.taskTypes,
    labels: w.labels,
    tenant: w.tenant,
    description: w.description,
    enabled: w.enabled,
    disabled_reason: w.disabledReason,
    failing_since: iso(w.failingSince),
    previous_secret_until: iso(w.previousSecretUntil),
    created_at: new Date(w.createdAt).toISOString(),
    updated_at: new Date(w.updatedAt).toISOString(),
  };
}

export function toDeliveryDto(
  m: WebhookMessageModel,
  attempts: readonly WebhookAttemptModel[],
): WebhookDeliveryDto {
  return {
    message_id: m.messageId,
    webhook_id: m.webhookId,
    event_type: m.eventType,
    task_id: m.taskId,
    url: m.url,
    status: m.status,
    attempts: m.attempts,
    next_attempt_at: new Date(m.nextAt).toISOString(),
    created_at: new Date(m.createdAt).toISOString(),
    finished_at: iso(m.finishedAt),
    payload: JSON.parse(m.body) as unknown,
    attempt_log: attempts.map((a) => ({
      attempt: a.attempt,
      at: new Date(a.at).toISOString(),
      status_code: a.statusCode,
      latency_ms: a.latencyMs,
      response: a.response,
      error: a.error,
      sent_by: a.sentBy,
    })),
  };
}

/** Query of a subscription's delivery log: a page, and the next one. */
export class WebhookDeliveriesQuery extends DeliveriesQuery {
  @ApiPropertyOptional({
    description:
      'the message_id of the last delivery of the previous page: the page holds the deliveries older than it',
    example: 'msg_01JD0000000000000000000000',
  })
  @IsOptional()
  @Matches(/^msg_[0-9A-Z]{26}$/, { message: 'before must be a message_id (msg_...)' })
  before?: string;
}
