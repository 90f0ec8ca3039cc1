import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { TransactionRunner } from '../database';
import { MESSAGE_COLUMNS, messageModel } from './webhook-messages.repository';
import { WebhookMessageModel } from './webhook.model';

/** A message claimed by an instance: its alone to send until `until`. */
export interface Claim {
  message: WebhookMessageModel;
  /** The claim's end; with the instance's name, what its record is conditional on. */
  until: number;
}

/** Looks at the due messages in one claim at most (each after losing some to another instance). */
const LOOKS = 3;

const marks = (n: number): string => Array.from({ length: n }, () => '?').join(', ');

/**
 * Claims on webhook messages: how every instance of the fleet sends, none sending a message
 * another is sending. A claim is a conditional UPDATE of the message row, its `claimed_by` and
 * `claim_until`: while it holds, the message is not due; once it lapses (its instance died) it is
 * due again for anyone. Two instances that want one message both ask for it while it is due and
 * unclaimed: the database lets one of them have it. `next_at` is left as it is: moving it would
 * move the message in the (webhook, status, next_at) index twice per attempt instead of once, and
 * the few claimed messages that index yields are skipped by the claim's condition.
 */
@Injectable()
export class WebhookClaims {
  /**
   * The index the "earlier message of the same task" check must use. MariaDB chose the
   * (webhook_id, created_at) one on a young table and read every message of the webhook for each
   * candidate (30 ms a look at 8,000 messages); this one reads a task's few.
   */
  private readonly byTaskIndex: string;

  constructor(
    db: DataSource,
    private readonly tx: TransactionRunner,
  ) {
    this.byTaskIndex =
      db.options.type === 'mysql'
        ? 'FORCE INDEX (ix_webhook_message_order)'
        : 'INDEXED BY ix_webhook_message_order';
  }

  private query(sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
    return this.tx.single((m) => m.query(sql, params) as Promise<Record<string, unknown>[]>);
  }

  /**
   * Up to `limit` pending messages of one webhook due by `now`, oldest due first, each the
   * earliest still pending of its (webhook, task): a later event of a task waits for the one
   * before it, even while that one is claimed and in flight elsewhere (it is pending until its
   * answer is recorded). One webhook at a time, on its own index range, so a backlog of another
   * costs nothing here.
   */
  async due(webhookId: string, now: number, limit: number): Promise<WebhookMessageModel[]> {
    const rows = await this.query(
      `SELECT ${MESSAGE_COLUMNS.replace(/(\w+)/g, 'm.$1')} FROM baton_webhook_message m
        WHERE m.webhook_id = ? AND m.status = 'pending' AND m.next_at <= ? AND m.claim_until <= ?
          AND NOT EXISTS (SELECT 1 FROM baton_webhook_message p ${this.byTaskIndex}
                           WHERE p.webhook_id = m.webhook_id AND p.task_id = m.task_id
                             AND p.status = 'pending' AND p.seq < m.seq)
        ORDER BY m.next_at, m.seq LIMIT ${Math.max(1, Math.floor(limit))}`,
      [webhookId, now, now],
    );
    return rows.map(messageModel);
  }

  /**
   * Claims up to `limit` of the webhook's due messages for `owner` until `until`. An instance that
   * lost some of them to another looks again: those are no longer due, the next ones may be (two
   * instances that look at once would otherwise both want the same oldest ones, every time).
   */
  async claim(
    webhookId: string,
    owner: string,
    now: number,
    until: number,
    limit: number,
  ): Promise<Claim[]> {
    const out: Claim[] = [];
    for (let look = 0; look < LOOKS && out.length < limit; look++) {
      const due = await this.due(webhookId, now, limit - out.length);
      if (due.length === 0) break;
      const won = await this.take(due, owner, now, until);
      out.push(...won.map((message) => ({ message, until })));
      if (won.length === due.length) break;
    }
    return out;
  }

  /**
   * One UPDATE of these due messages, conditional on each being still pending and due: the rows
   * it changed are the owner's; another instance's claim made meanwhile made the condition false.
   */
  private async take(
    due: readonly WebhookMessageModel[],
    owner: string,
    now: number,
    until: number,
  ): Promise<WebhookMessageModel[]> {
    const ids = due.map((m) => m.messageId);
    const won = await this.tx.write(
      `UPDATE baton_webhook_message SET claimed_by = ?, claim_until = ?
        WHERE message_id IN (${marks(ids.length)}) AND status = 'pending' AND next_at <= ?
          AND claim_until <= ?`,
      [owner, until, ...ids, now, now],
    );
    if (won === due.length) return [...due];
    if (won === 0) return [];
    // Some went to another instance first: which ones the row count cannot tell.
    const mine = new Set(
      (
        await this.query(
          `SELECT message_id FROM baton_webhook_message
            WHERE message_id IN (${marks(ids.length)}) AND claimed_by = ? AND claim_until = ?
              AND status = 'pending'`,
          [...ids, owner, until],
        )
      ).map((r) => String(r.message_id)),
    );
    return due.filter((m) => mine.has(m.messageId));
  }

  /** Hands claims back unsent: due again at once, for any instance. */
  async release(owner: string, claims: readonly Claim[]): Promise<void> {
    const byUntil = new Map<number, string[]>();
    for (const c of claims)
      byUntil.set(c.until, [...(byUntil.get(c.until) ?? []), c.message.messageId]);
    for (const [until, ids] of byUntil)
      await this.tx.write(
        `UPDATE baton_webhook_message SET claim_until = 0
          WHERE message_id IN (${marks(ids.length)}) AND status = 'pending'
            AND claimed_by = ? AND claim_until = ?`,
        [...ids, owner, until],
      );
  }
}
