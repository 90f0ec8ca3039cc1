import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ContractErrorCode, Envelope, ok } from '@baton/task-contract';
import { Access, Audited, TenantFields } from '../auth';
import { ApiErrors, DEFAULT_TENANT, TenantQuery } from '../common';
import {
  CallbackSecretDto,
  CreateWebhookDto,
  DeliveriesQuery,
  RedeliverDto,
  RedeliveredDto,
  UpdateWebhookDto,
  WebhookDeliveriesQuery,
  WebhookDeliveryDto,
  WebhookDto,
  WebhookWithSecretDto,
  toDeliveryDto,
  toWebhookDto,
} from './dto/webhook.dto';
import { TasksService } from '../tasks';
import { WebhooksService } from './webhooks.service';

const withSecret = (w: Parameters<typeof toWebhookDto>[0]): WebhookWithSecretDto => ({
  ...toWebhookDto(w),
  secret: w.secret,
});

@ApiTags('webhooks')
@Access('operate')
@Controller('v1/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  @TenantFields('body.tenant')
  @Audited('webhook.create', 'webhook_id')
  @HttpCode(201)
  @ApiOperation({
    summary: 'subscribe a URL to task events; the answer holds the signing secret, shown this once',
  })
  @ApiOkResponse({ type: WebhookWithSecretDto })
  async create(@Body() dto: CreateWebhookDto): Promise<Envelope<WebhookWithSecretDto>> {
    return ok(withSecret(await this.webhooks.create(dto)));
  }

  @Access('read')
  @Get()
  @TenantFields('query.tenant')
  @ApiOperation({ summary: 'list webhook subscriptions (without their secrets)' })
  @ApiOkResponse({ type: [WebhookDto] })
  async list(@Query() q: TenantQuery): Promise<Envelope<WebhookDto[]>> {
    return ok((await this.webhooks.list(q.tenant)).map(toWebhookDto));
  }

  @Post('callback-secret')
  @HttpCode(200)
  @TenantFields('query.tenant')
  @Audited('webhook.callback-secret', 'tenant')
  @ApiOperation({
    summary:
      "a new secret for the callback_url calls of a tenant's tasks (shown this once); the previous one keeps signing for 24 h",
  })
  @ApiOkResponse({ type: CallbackSecretDto })
  async callbackSecret(@Query() q: TenantQuery): Promise<Envelope<CallbackSecretDto>> {
    const tenant = q.tenant ?? DEFAULT_TENANT;
    const w = await this.webhooks.rotateCallbackSecret(tenant);
    return ok({
      tenant,
      secret: w.secret,
      previous_secret_until:
        w.previousSecretUntil === null ? null : new Date(w.previousSecretUntil).toISOString(),
    });
  }

  @Access('read')
  @Get(':webhook_id')
  @ApiOperation({ summary: 'get a webhook subscription (without its secret)' })
  @ApiOkResponse({ type: WebhookDto })
  async get(@Param('webhook_id') webhookId: string): Promise<Envelope<WebhookDto>> {
    return ok(toWebhookDto(await this.webhooks.get(webhookId)));
  }

  @Patch(':webhook_id')
  @Audited('webhook.update', 'webhook_id')
  @ApiErrors(ContractErrorCode.VERSION_CONFLICT)
  @ApiOperation({
    summary: 'change a subscription, or disable / enable it with {"enabled": false | true}',
  })
  @ApiOkResponse({ type: WebhookDto })
  async update(
    @Param('webhook_id') webhookId: string,
    @Body() dto: UpdateWebhookDto,
  ): Promise<Envelope<WebhookDto>> {
    return ok(toWebhookDto(await this.webhooks.update(webhookId, dto)));
  }

  @Delete(':webhook_id')
  @Audited('webhook.delete', 'webhook_id')
  @ApiOperation({
    summary: 'delete a subscription with its delivery log (pending messages are not sent)',
  })
  @ApiOkResponse({ schema: { nullable: true, enum: [null], description: 'always null' } })
  async remove(@Param('webhook_id') webhookId: string): Promise<Envelope<null>> {
    await this.webhooks.remove(webhookId);
    return ok(null);
  }

  @Post(':webhook_id/rotate-secret')
  @Audited('webhook.rotate-secret', 'webhook_id')
  @ApiErrors(ContractErrorCode.VERSION_CONFLICT)
  @ApiOperation({
    summary:
      'a new signing secret (shown this once); the previous one keeps signing beside it for 24 h',
  })
  @ApiOkResponse({ type: WebhookWithSecretDto })
  async rotate(@Param('webhook_id') webhookId: string): Promise<Envelope<WebhookWithSecretDto>> {
    return ok(withSecret(await this.webhooks.rotate(webhookId)));
  }

  @Post(':webhook_id/test')
  @HttpCode(202)
  @ApiOperation({
    summary: 'send a `webhook.test` message now; its attempts show in the delivery log',
  })
  @ApiOkResponse({ type: WebhookDeliveryDto })
  async ping(@Param('webhook_id') webhookId: string): Promise<Envelope<WebhookDeliveryDto>> {
    return ok(toDeliveryDto(await this.webhooks.ping(webhookId), []));
  }

  @Access('read')
  @Get(':webhook_id/deliveries')
  @ApiOperation({
    summary:
      "the subscription's messages, newest first, each with its attempts; `before` pages to older ones",
  })
  @ApiOkResponse({ type: [WebhookDeliveryDto] })
  async deliveries(
    @Param('webhook_id') webhookId: string,
    @Query() q: WebhookDeliveriesQuery,
  ): Promise<Envelope<WebhookDeliveryDto[]>> {
    const list = await this.webhooks.deliveries(
      { webhookId, before: q.before },
      q.status,
      q.limit ?? 50,
    );
    return ok(list.map(([m, a]) => toDeliveryDto(m, a)));
  }

  @Post(':webhook_id/deliveries/:message_id/redeliver')
  @HttpCode(202)
  @ApiOperation({ summary: 'send one message again, with the same webhook-id' })
  @ApiOkResponse({ type: RedeliveredDto })
  async redeliverOne(
    @Param('webhook_id') webhookId: string,
    @Param('message_id') messageId: string,
  ): Promise<Envelope<RedeliveredDto>> {
    return ok({ redelivered: await this.webhooks.redeliverOne(webhookId, messageId) });
  }

  @Post(':webhook_id/redeliver')
  @HttpCode(202)
  @ApiOperation({ summary: 'send again every message given up since a time' })
  @ApiOkResponse({ type: RedeliveredDto })
  async redeliverFailed(
    @Param('webhook_id') webhookId: string,
    @Body() dto: RedeliverDto,
  ): Promise<Envelope<RedeliveredDto>> {
    const since = Date.parse(dto.since);
    return ok({ redelivered: await this.webhooks.redeliverFailed(webhookId, since) });
  }
}

@ApiTags('webhooks')
@Access('read')
@Controller('v1/tasks')
export class TaskDeliveriesController {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly tasks: TasksService,
  ) {}

  @Get(':task_id/deliveries')
  @ApiOperation({
    summary: "the webhook and callback messages of a task's events, newest first, with attempts",
  })
  @ApiOkResponse({ type: [WebhookDeliveryDto] })
  async deliveries(
    @Param('task_id') taskId: string,
    @Query() q: DeliveriesQuery,
  ): Promise<Envelope<WebhookDeliveryDto[]>> {
    await this.tasks.get(taskId); // 404 for a task that does not exist
    const list = await this.webhooks.deliveries({ taskId }, q.status, q.limit ?? 50);
    return ok(list.map(([m, a]) => toDeliveryDto(m, a)));
  }
}
