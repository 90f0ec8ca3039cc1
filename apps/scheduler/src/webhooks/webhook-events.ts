import { Injectable } from '@nestjs/common';
import { monotonicUlid } from '../common';
import { CANCELLED_OUTCOME, RepetitionKind, TaskStatus } from '@baton/task-contract';
import { EntityManager } from 'typeorm';
import { NewTaskStatusChange, TaskChangeWriter, TaskStatusChange } from '../task-store';
import { TaskDto, toTaskDto } from '../tasks';
import { WorkerUnhealthy } from '../workers';
import { CENTRE_TASK_TYPE } from '../task-types';
import type { ApprovalRequested } from '../topologies';
import { callbackSignerId, WebhookSecrets } from './webhook-secrets';
import { NewWebhookMessage, WebhookEventType, WebhookModel } from './webhook.model';
import { WebhookMessagesRepository } from './webhook-messages.repository';
import { WebhooksRepository } from './webhooks.repository';

/** Error codes of a failure by timeout (FailurePolicy). */
const TIMEOUT_CODES = new Set(['deadline_timeout', 'heartbeat_timeout', 'queue_timeout']);

/** The events a status change is (`run`: the task is a topology run's centre task). */
export function eventTypes(
  c: Pick<TaskStatusChange, 'from' | 'to' | 'outcome'>,
  errorCode: string | null,
  run = false,
): WebhookEventType[] {
  const types: WebhookEventType[] = [];
  if (c.from === null) types.push('task.created');
  types.push('task.status_changed');
  if (c.to === TaskStatus.FAIL && errorCode !== null && TIMEOUT_CODES.has(errorCode))
    types.push('task.timed_out');
  if (c.to === TaskStatus.FINISH) {
    if (c.outcome === TaskStatus.SUCCESS) types.push('task.succeeded');
    if (c.outcome === TaskStatus.FAIL || c.outcome === TaskStatus.ROLLBACK)
      types.push('task.failed');
    if (c.outcome === CANCELLED_OUTCOME) types.push('task.cancelled');
    types.push('task.finished');
    if (run) {
      types.push('topology.run.finished');
      if (c.outcome === TaskStatus.FAIL) types.push('topology.run.failed');
    }
  }
  return types;
}

/** Whether a subscription hears events of this task. */
export function hears(
  w: WebhookModel,
  task: { tenant: string; task_type: string; labels: Record<string, string> },
): boolean {
  if (w.tenant !== null && w.tenant !== task.tenant) return false;
  if (w.taskTypes.length > 0 && !w.taskTypes.includes(task.task_type)) return false;
  for (const [k, v] of Object.entries(w.labels)) if (task.labels[k] !== v) return false;
  return true;
}

/** The body every receiver gets: the Standard Webhooks shape, `data` the task as the API has it. */
export function messageBody(
  type: string,
  at: number,
  data: unknown,
  change?: Pick<TaskStatusChange, 'from' | 'to'> & { reason: string },
): string {
  return JSON.stringify({
    type,
    timestamp: new Date(at).toISOString(),
    data,
    ...(change
      ? { change: { from_status: change.from, to_status: change.to, reason: change.reason } }
      : {}),
  });
}

const nextUlid = monotonicUlid();

/**
 * A message id (the `webhook-id` header): `msg_` and a ULID. Unique across instances, and
 * time-ordered, so new messages go to the end of the table's primary key, not all over it.
 */
export const newMessageId = (): string => `msg_${nextUlid()}`;

/**
 * Webhooks' writer on the task change feed: the messages of each status change are written in
 * the change's own transaction (the outbox), for the subscriptions enabled as this process last
 * read them (each second, and on every save here: one saved through another instance is heard
 * about a second later). The sender delivers them.
 */
@Injectable()
export class WebhookEvents implements TaskChangeWriter {
  readonly name = 'webhooks';
  private subscriptions: readonly WebhookModel[] = [];
  private reads = 0;
  private applied = 0;

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly messages: WebhookMessagesRepository,
    private readonly secrets: WebhookSecrets,
  ) {}

  /**
   * Reads the enabled subscriptions again. A read that started before another one and ends after
   * it is dropped: it may miss a subscription saved in between (then heard a second late).
   */
  async refresh(): Promise<void> {
    const read = ++this.reads;
    const list = await this.repo.enabledSubscriptions();
    if (read < this.applied) return;
    this.applied = read;
    this.subscriptions = list;
  }

  /** The enabled subscriptions as last read. */
  enabled(): readonly WebhookModel[] {
    return this.subscriptions;
  }

  /**
   * The messages of these changes, in their transaction: one per enabled subscription (as last
   * read) and event type that hears it, and one for the `callback_url` of a task that finished,
   * each with the task as the API shows it at that move. They commit, or roll back, with the
   * change: none is lost, none is made twice.
   */
  async write(m: EntityManager, changes: readonly NewTaskStatusChange[]): Promise<boolean> {
    const subs = this.subscriptions;
    const rows: NewWebhookMessage[] = [];
    const signers = new Set<string>();
    for (const c of changes) {
      const callback = c.to === TaskStatus.FINISH ? c.task.callbackUrl : null;
      if (subs.length === 0 && callback === null) continue;
      const types = eventTypes(
        c,
        c.task.error?.code ?? null,
        c.task.repetition === RepetitionKind.TOPOLOGY,
      );
      const scope = { tenant: c.tenant, task_type: c.taskType, labels: c.task.labels };
      let data: TaskDto | undefined;
      // Events of one move go out in the order eventTypes lists them: each its own place.
      const message = (webhookId: string, type: string, url: string | null): NewWebhookMessage => {
        if (!data) {
          data = toTaskDto(c.task);
          data.task_status = c.to;
        }
        return {
          messageId: newMessageId(),
          webhookId,
          eventType: type,
          tenant: c.tenant,
          taskId: c.taskId,
          url,
          body: messageBody(type, c.at, data, { from: c.from, to: c.to, reason: c.reason }),
          seq: c.order * 8 + Math.max(0, types.indexOf(type as WebhookEventType)),
          createdAt: c.at,
        };
      };
      for (const w of subs) {
        if (!hears(w, scope)) continue;
        for (const type of types)
          if (w.events.includes(type)) rows.push(message(w.webhookId, type, null));
      }
      if (callback !== null) {
        rows.push(message(callbackSignerId(c.tenant), 'task.finished', callback));
        signers.add(c.tenant);
      }
    }
    if (rows.length === 0) return false;
    // A tenant's callback signer exists before its first message is sent (made here if not).
    for (const tenant of signers) await this.secrets.ensureSigner(m, tenant);
    await this.messages.insertMessages(m, rows);
    return true;
  }

  /**
   * `worker.unhealthy`, in the transaction that recorded it (WorkerHealthWatch), for the
   * subscriptions of every tenant (workers are shared) that ask for it, whose task types the
   * worker serves (when they name some), and that filter on no label (a worker carries none).
   */
  async workerEvents(m: EntityManager, events: readonly WorkerUnhealthy[]): Promise<void> {
    const rows: NewWebhookMessage[] = [];
    for (const e of events)
      for (const w of this.subscriptions) {
        if (!w.events.includes('worker.unhealthy') || w.tenant !== null) continue;
        if (Object.keys(w.labels).length > 0) continue;
        if (w.taskTypes.length > 0 && !w.taskTypes.some((t) => e.worker.task_types.includes(t)))
          continue;
        rows.push({
          messageId: newMessageId(),
          webhookId: w.webhookId,
          eventType: 'worker.unhealthy',
          tenant: '',
          taskId: null,
          url: null,
          body: messageBody('worker.unhealthy', e.since, e.worker),
          seq: 0,
          createdAt: e.since,
        });
      }
    if (rows.length === 0) return;
    // The sender finds them on its next look (BATON_WEBHOOK_POLL), once they committed.
    await this.messages.insertMessages(m, rows);
  }

  /**
   * `topology.approval_requested`, in the transaction that wrote the waiting approval node: for
   * the subscriptions that ask for it and hear the run (its tenant, the `topology` task type,
   * its labels). `data` says what is asked, of whom, until when, and what the timeout decides.
   */
  async approvalEvents(m: EntityManager, events: readonly ApprovalRequested[]): Promise<void> {
    const rows: NewWebhookMessage[] = [];
    for (const e of events) {
      const scope = { tenant: e.tenant, task_type: CENTRE_TASK_TYPE, labels: e.labels };
      for (const w of this.subscriptions) {
        if (!w.events.includes('topology.approval_requested') || !hears(w, scope)) continue;
        rows.push({
          messageId: newMessageId(),
          webhookId: w.webhookId,
          eventType: 'topology.approval_requested',
          tenant: e.tenant,
          taskId: e.runId,
          url: null,
          body: messageBody('topology.approval_requested', e.at, {
            run_id: e.runId,
            name: e.name,
            version: e.version,
            tenant: e.tenant,
            labels: e.labels,
            node: e.node,
            message: e.request.message,
            approvers: e.request.approvers,
            timeout_at: new Date(e.request.until).toISOString(),
            on_timeout: e.request.on_timeout,
          }),
          // After every event of the run's centre task so far (their seq: order * 8 + type).
          seq: (e.centreVersion * 16 + 15) * 8 + 7,
          createdAt: e.at,
        });
      }
    }
    if (rows.length > 0) await this.messages.insertMessages(m, rows);
  }
}
