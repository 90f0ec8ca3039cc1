import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { TransactionRunner } from '../database';
import {
  MessageStatus,
  NewWebhookMessage,
  WebhookAttemptModel,
  WebhookMessageModel,
} from './webhook.model';
import { WebhooksRepository } from './webhooks.repository';

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export const messageModel = (r: Record<string, unknown>): WebhookMessageModel => ({
  messageId: String(r.message_id),
  webhookId: String(r.webhook_id),
  eventType: String(r.event_type),
  tenant: String(r.tenant),
  taskId: r.task_id === null ? null : String(r.task_id),
  url: r.url === null ? null : String(r.url),
  body: String(r.body),
  seq: Number(r.seq),
  status: r.status as MessageStatus,
  attempts: Number(r.attempts),
  nextAt: Number(r.next_at),
  lastStatus: num(r.last_status),
  lastError: r.last_error === null ? null : String(r.last_error),
  createdAt: Number(r.created_at),
  finishedAt: num(r.finished_at),
});

export const MESSAGE_COLUMNS = `message_id, webhook_id, event_type, tenant, task_id, url, body, seq, status,
  attempts, next_at, last_status, last_error, created_at, finished_at`;

/**
 * Storage of webhook messages and their attempts (the delivery log). Claims are in
 * WebhookClaims, attempts are recorded by WebhookAttemptWriter.
 */
@Injectable()
export class WebhookMessagesRepository {
  constructor(
    private readonly tx: TransactionRunner,
    private readonly webhooks: WebhooksRepository,
  ) {}

  private query(sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
    return this.tx.single((m) => m.query(sql, params) as Promise<Record<string, unknown>[]>);
  }

  /** Messages, in the caller's transaction. */
  async insertMessages(m: EntityManager, rows: readonly NewWebhookMessage[]): Promise<void> {
    for (let i = 0; i < rows.length; i += 200) {
      const part = rows.slice(i, i + 200);
      await m.query(
        `INSERT INTO baton_webhook_message (message_id, webhook_id, event_type, tenant, task_id, url,
           body, seq, status, attempts, next_at, created_at)
         VALUES ${part.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?)").join(', ')}`,
        part.flatMap((r) => [
          r.messageId,
          r.webhookId,
          r.eventType,
          r.tenant,
          r.taskId,
          r.url,
          r.body,
          r.seq,
          r.createdAt,
          r.createdAt,
        ]),
      );
    }
  }

  async message(messageId: string): Promise<WebhookMessageModel | undefined> {
    const rows = await this.query(
      `SELECT ${MESSAGE_COLUMNS} FROM baton_webhook_message WHERE message_id = ?`,
      [messageId],
    );
    return rows[0] ? messageModel(rows[0]) : undefined;
  }

  /**
   * A webhook's messages, newest first (by creation, then id), those after `after` in that order
   * when given: a page of the delivery log, read on the (webhook_id, created_at) index.
   */
  async messagesOf(
    webhookId: string,
    status: MessageStatus | undefined,
    limit: number,
    after?: Pick<WebhookMessageModel, 'createdAt' | 'messageId'>,
  ): Promise<WebhookMessageModel[]> {
    const params: unknown[] = [webhookId];
    if (status) params.push(status);
    if (after) params.push(after.createdAt, after.createdAt, after.messageId);
    const rows = await this.query(
      `SELECT ${MESSAGE_COLUMNS} FROM baton_webhook_message WHERE webhook_id = ?
         ${status ? 'AND status = ?' : ''}
         ${after ? 'AND (created_at < ? OR (created_at = ? AND message_id < ?))' : ''}
         ORDER BY created_at DESC, message_id DESC LIMIT ${Math.floor(limit)}`,
      params,
    );
    return rows.map(messageModel);
  }

  /** A task's messages, newest first: asked of each webhook (on its index by task). */
  async messagesOfTask(
    taskId: string,
    status: MessageStatus | undefined,
    limit: number,
  ): Promise<WebhookMessageModel[]> {
    const out: WebhookMessageModel[] = [];
    for (const webhookId of await this.webhooks.ids()) {
      const rows = await this.query(
        `SELECT ${MESSAGE_COLUMNS} FROM baton_webhook_message WHERE webhook_id = ? AND task_id = ?
           ${status ? 'AND status = ?' : ''} ORDER BY seq DESC LIMIT ${Math.floor(limit)}`,
        status ? [webhookId, taskId, status] : [webhookId, taskId],
      );
      out.push(...rows.map(messageModel));
    }
    return out
      .sort((a, b) => b.createdAt - a.createdAt || b.seq - a.seq)
      .slice(0, Math.floor(limit));
  }

  /** The attempts of these messages, by message, oldest first. */
  async attemptsOf(messageIds: readonly string[]): Promise<Map<string, WebhookAttemptModel[]>> {
    const out = new Map<string, WebhookAttemptModel[]>();
    if (messageIds.length === 0) return out;
    const rows = await this.query(
      `SELECT message_id, attempt, at, status_code, latency_ms, response, error, sent_by
         FROM baton_webhook_attempt WHERE message_id IN (${messageIds.map(() => '?').join(', ')})
        ORDER BY id`,
      [...messageIds],
    );
    for (const r of rows) {
      const list = out.get(String(r.message_id)) ?? [];
      list.push({
        attempt: Number(r.attempt),
        at: Number(r.at),
        statusCode: num(r.status_code),
        latencyMs: Number(r.latency_ms),
        response: r.response === null ? null : String(r.response),
        error: r.error === null ? null : String(r.error),
        sentBy: r.sent_by === null || r.sent_by === undefined ? null : String(r.sent_by),
      });
      out.set(String(r.message_id), list);
    }
    return out;
  }

  /** Sends messages again soon (same ids); their attempts so far stay in the log. */
  async redeliver(
    where: { messageId: string } | { webhookId: string; since: number },
    now: number,
  ): Promise<number> {
    const [cond, params] =
      'messageId' in where
        ? ['message_id = ?', [where.messageId]]
        : [
            "webhook_id = ? AND status = 'failed' AND created_at >= ?",
            [where.webhookId, where.since],
          ];
    return this.tx.write(
      `UPDATE baton_webhook_message SET status = 'pending', next_at = ?, finished_at = NULL
        WHERE ${cond}`,
      [now, ...params],
    );
  }

  /** Pending messages of every webhook (each counted on its own index range). */
  async depth(): Promise<number> {
    let pending = 0;
    for (const webhookId of await this.webhooks.ids()) {
      const [r] = await this.query(
        "SELECT COUNT(*) AS n FROM baton_webhook_message WHERE webhook_id = ? AND status = 'pending'",
        [webhookId],
      );
      pending += Number(r?.n ?? 0);
    }
    return pending;
  }

  /** Drops the messages created before `before` that are no longer pending, with their attempts. */
  async purge(before: number, batch: number): Promise<number> {
    let purged = 0;
    for (const webhookId of await this.webhooks.ids())
      for (;;) {
        const n = await this.purgeOf(webhookId, before, batch, false);
        purged += n;
        if (n < batch) break;
      }
    return purged;
  }

  /** Deletes a webhook's whole log, a batch at a time (a long log is never one long lock). */
  async removeLog(webhookId: string): Promise<void> {
    while ((await this.purgeOf(webhookId, Number.MAX_SAFE_INTEGER, 500, true)) > 0);
  }

  /** One batch of a webhook's messages (pending ones too, with `all`) and their attempts. */
  private async purgeOf(
    webhookId: string,
    before: number,
    batch: number,
    all: boolean,
  ): Promise<number> {
    const ids = await this.query(
      `SELECT message_id FROM baton_webhook_message WHERE webhook_id = ? AND created_at < ?
         ${all ? '' : "AND status <> 'pending'"} LIMIT ${Math.floor(batch)}`,
      [webhookId, before],
    );
    const list = ids.map((r) => String(r.message_id));
    if (list.length > 0)
      await this.tx.run(async (m) => {
        const marks = list.map(() => '?').join(', ');
        await m.query(`DELETE FROM baton_webhook_attempt WHERE message_id IN (${marks})`, list);
        await m.query(`DELETE FROM baton_webhook_message WHERE message_id IN (${marks})`, list);
      });
    return list.length;
  }
}
