import { createHash, randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { TaskStatus } from '@baton/task-contract';
import { EntityManager } from 'typeorm';
import { Clock } from '../common';
import { TransactionRunner } from '../database';
import { NewTaskStatusChange, TaskChangeConsumer, TaskStatusChange } from '../task-store';
import { toTaskDto } from '../tasks';
import { WorkerUnhealthy } from '../workers';
import { WebhookSecrets } from './webhook-secrets';
import { NewWebhookMessage, WebhookEventType, WebhookModel } from './webhook.model';
import { WebhooksRepository } from './webhooks.repository';

/** What the outbox keeps of a change for webhooks: written with it, so the task is as it was. */
interface StoredEvent {
  /** The event's id: messages made of it again (after a crash) are the same messages. */
  e: string;
  /** Order of the task's moves. */
  s: number;
  /** The reason of the move. */
  r: string;
  /** The task as the API shows it, at this move. */
  d: ReturnType<typeof toTaskDto>;
}

/** Error codes of a failure by timeout (FailurePolicy). */
const TIMEOUT_CODES = new Set(['deadline_timeout', 'heartbeat_timeout', 'queue_timeout']);

/** The events a status change is. */
export function eventTypes(
  c: Pick<TaskStatusChange, 'from' | 'to' | 'outcome'>,
  errorCode: string | null,
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
    types.push('task.finished');
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

/** A message id: `msg_` and 26 characters, unique (the `webhook-id` header). */
export const newMessageId = (): string =>
  `msg_${createHash('sha256').update(randomUUID()).digest('base64url').slice(0, 26)}`;

/**
 * The task change feed's webhook consumer. In the writing transaction it keeps, for each status
 * change some subscription (or the task's `callback_url`) may want, the task as it was then. Then,
 * at least once and in order per task, it turns each change into messages: one per subscription
 * and event type it hears, one for the callback of a task that finished. A change handed over
 * again makes the same messages (keyed by the event's id), never a second copy.
 */
@Injectable()
export class WebhookEvents implements TaskChangeConsumer {
  readonly name = 'webhooks';
  private readonly logger = new Logger('Webhooks');
  /**
   * The enabled subscriptions as this process last read them (each second, and on every save
   * here): what `wants` looks at. A subscription saved on another instance hears changes from
   * its next read on; `handle` matches against the stored ones again.
   */
  private subscriptions: readonly WebhookModel[] = [];
  private reads = 0;
  private applied = 0;
  private readonly written: (() => void)[] = [];

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly secrets: WebhookSecrets,
    private readonly tx: TransactionRunner,
    private readonly clock: Clock,
  ) {}

  /** Called when messages were written. */
  onWritten(listener: () => void): void {
    this.written.push(listener);
  }

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

  wants(c: NewTaskStatusChange): boolean {
    if (c.to === TaskStatus.FINISH && c.task.callbackUrl !== null) return true;
    if (this.subscriptions.length === 0) return false;
    const task = { tenant: c.tenant, task_type: c.taskType, labels: c.task.labels };
    const types = eventTypes(c, c.task.error?.code ?? null);
    return this.subscriptions.some(
      (w) => hears(w, task) && types.some((t) => w.events.includes(t)),
    );
  }

  payload(c: NewTaskStatusChange): string {
    const d = toTaskDto(c.task);
    d.task_status = c.to;
    const stored: StoredEvent = { e: randomUUID(), s: c.order, r: c.reason, d };
    return JSON.stringify(stored);
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
          eventKey: `worker:${e.worker.worker_id}:${e.since}`,
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
    await this.repo.insertMessages(m, rows);
  }

  async handle(changes: readonly TaskStatusChange[]): Promise<void> {
    const subs = await this.repo.enabledSubscriptions();
    const rows: NewWebhookMessage[] = [];
    const now = this.clock.now();
    for (const c of changes) {
      if (c.payload === null) continue;
      const ev = JSON.parse(c.payload) as StoredEvent;
      const types = eventTypes(c, ev.d.error?.code ?? null);
      // Events of one move go out in the order eventTypes lists them: each its own place.
      const message = (w: WebhookModel, type: string, url: string | null): NewWebhookMessage => ({
        messageId: newMessageId(),
        webhookId: w.webhookId,
        eventKey: `${ev.e}:${url === null ? type : 'callback'}`,
        eventType: type,
        tenant: c.tenant,
        taskId: c.taskId,
        url,
        body: messageBody(type, c.at, ev.d, { from: c.from, to: c.to, reason: ev.r }),
        seq: ev.s * 8 + Math.max(0, types.indexOf(type as WebhookEventType)),
        createdAt: now,
      });
      for (const w of subs) {
        if (!hears(w, ev.d)) continue;
        for (const type of types) if (w.events.includes(type)) rows.push(message(w, type, null));
      }
      if (c.to === TaskStatus.FINISH && ev.d.callback_url)
        rows.push(
          message(await this.secrets.callbackSigner(c.tenant), 'task.finished', ev.d.callback_url),
        );
    }
    if (rows.length === 0) return;
    await this.tx.run((m) => this.repo.insertMessages(m, rows));
    this.logger.debug(`${rows.length} webhook message(s) from ${changes.length} change(s)`);
    for (const l of this.written) l();
  }
}
