import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { TransactionRunner } from '../database';
import { AttemptOutcome } from './webhook-outcome';
import { WebhookAttemptModel, WebhookMessageModel } from './webhook.model';

/** One attempt, what it leads to, and the claim it was made under. */
export interface AttemptRecord extends AttemptOutcome {
  message: WebhookMessageModel;
  attempt: WebhookAttemptModel;
  /**
   * The claim it was sent under: the message row changes only while that claim still holds. A
   * claim that lapsed meanwhile (this instance stalled) is another's now: its attempt is logged,
   * and the message is left to the one that holds it.
   */
  claim: { by: string; until: number };
}

interface Waiting {
  record: AttemptRecord;
  resolve(): void;
  reject(err: unknown): void;
}

/** Most attempts in one group commit. */
const MAX_GROUP = 256;
/** Groups written at once on MySQL (each holds a pooled connection); SQLite has one connection. */
const MYSQL_WRITERS = 2;
/** While a group is being written, another writer starts only for at least this many attempts. */
const MIN_EXTRA_GROUP = 32;

const cases = (column: string, ids: readonly string[], values: readonly unknown[]) => ({
  sql: `${column} = CASE message_id${' WHEN ? THEN ?'.repeat(ids.length)} END`,
  params: ids.flatMap((id, i) => [id, values[i]]),
});

/**
 * Records webhook attempts in groups, as the task store's GroupCommitWriter writes task changes:
 * the attempts answered while a group is being written wait, and go together in the next one.
 * A group is one transaction, one commit: its attempt rows in one INSERT, its messages' new states
 * in one UPDATE (each row still conditional on its own claim), and each subscription's failing
 * streak once. A promise settles only after the commit that holds its attempt, so the next
 * message of a task is never sent before the one before it is recorded.
 */
@Injectable()
export class WebhookAttemptWriter {
  private readonly waiting: Waiting[] = [];
  private writing = 0;
  private writers = 0;
  private readonly maxWriters: number;

  constructor(
    db: DataSource,
    private readonly tx: TransactionRunner,
  ) {
    this.maxWriters = db.options.type === 'mysql' ? MYSQL_WRITERS : 1;
  }

  /** Attempts answered and not yet committed. */
  get backlog(): number {
    return this.waiting.length + this.writing;
  }

  /** Records one attempt with the next group; settles once that group has committed. */
  record(record: AttemptRecord): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ record, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (
      this.writers < this.maxWriters &&
      this.waiting.length > 0 &&
      (this.writers === 0 || this.waiting.length >= MIN_EXTRA_GROUP)
    ) {
      const batch = this.waiting.splice(0, MAX_GROUP);
      this.writers++;
      this.writing += batch.length;
      void this.write(batch).finally(() => {
        this.writers--;
        this.writing -= batch.length;
        this.pump();
      });
    }
  }

  private async write(batch: Waiting[]): Promise<void> {
    try {
      await this.tx.run((m) =>
        this.writeGroup(
          m,
          batch.map((w) => w.record),
        ),
      );
      for (const w of batch) w.resolve();
      return;
    } catch (err) {
      if (batch.length === 1) {
        batch[0].reject(err);
        return;
      }
    }
    // The group rolled back whole: each alone, so that one bad row fails only its own attempt.
    for (const w of batch) {
      try {
        await this.tx.run((m) => this.writeGroup(m, [w.record]));
        w.resolve();
      } catch (err) {
        w.reject(err);
      }
    }
  }

  /** The attempts of a group, in the caller's transaction. */
  async writeGroup(m: EntityManager, records: readonly AttemptRecord[]): Promise<void> {
    await m.query(
      `INSERT INTO baton_webhook_attempt (message_id, webhook_id, task_id, attempt, at, status_code,
         latency_ms, response, error, sent_by)
       VALUES ${records.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
      records.flatMap(({ message: msg, attempt: a }) => [
        msg.messageId,
        msg.webhookId,
        msg.taskId,
        a.attempt,
        a.at,
        a.statusCode,
        a.latencyMs,
        a.response,
        a.error,
        a.sentBy,
      ]),
    );
    const ids = records.map((r) => r.message.messageId);
    const sets = [
      cases(
        'status',
        ids,
        records.map((r) => r.status),
      ),
      cases(
        'attempts',
        ids,
        records.map((r) => r.attempt.attempt),
      ),
      cases(
        'next_at',
        ids,
        records.map((r) => r.nextAt),
      ),
      cases(
        'last_status',
        ids,
        records.map((r) => r.attempt.statusCode),
      ),
      cases(
        'last_error',
        ids,
        records.map((r) => r.attempt.error),
      ),
      cases(
        'finished_at',
        ids,
        records.map((r) => (r.status === 'pending' ? null : r.attempt.at)),
      ),
    ];
    const by = cases(
      'claimed_by',
      ids,
      records.map((r) => r.claim.by),
    );
    const until = cases(
      'claim_until',
      ids,
      records.map((r) => r.claim.until),
    );
    // The claim ends with its record: a retry is due on its schedule, not when the lease runs out.
    await m.query(
      `UPDATE baton_webhook_message SET ${sets.map((s) => s.sql).join(', ')}, claim_until = 0
        WHERE message_id IN (${ids.map(() => '?').join(', ')}) AND status = 'pending'
          AND ${by.sql} AND ${until.sql}`,
      [...sets.flatMap((s) => s.params), ...ids, ...by.params, ...until.params],
    );
    await this.subscriptions(m, records);
  }

  /**
   * Each subscription's fate after the group: disabled (the first reason of the group), or its
   * failing streak as its last attempt left it. Conditional, so that instances telling the same
   * streak do not move its start: it starts only when none runs, and ends only when one does.
   * In webhook order, so that two groups lock these rows in the same order.
   */
  private async subscriptions(m: EntityManager, records: readonly AttemptRecord[]): Promise<void> {
    const last = new Map<string, AttemptRecord>();
    const disable = new Map<string, AttemptRecord>();
    for (const r of [...records].sort((a, b) => a.attempt.at - b.attempt.at)) {
      const id = r.message.webhookId;
      if (r.disable !== null && !disable.has(id)) disable.set(id, r);
      if (r.streakChanged || last.has(id)) last.set(id, r);
    }
    for (const id of [...new Set([...last.keys(), ...disable.keys()])].sort()) {
      const off = disable.get(id);
      const r = last.get(id);
      if (off)
        await m.query(
          `UPDATE baton_webhook SET enabled = 0, disabled_reason = ?,
             failing_since = COALESCE(failing_since, ?), updated_at = ?, version = version + 1
            WHERE webhook_id = ? AND kind = 'subscription' AND enabled = 1`,
          [off.disable, off.failingSince, off.attempt.at, id],
        );
      else if (r && r.failingSince === null)
        await m.query(
          'UPDATE baton_webhook SET failing_since = NULL WHERE webhook_id = ? AND failing_since IS NOT NULL',
          [id],
        );
      else if (r)
        await m.query(
          'UPDATE baton_webhook SET failing_since = ? WHERE webhook_id = ? AND failing_since IS NULL',
          [r.failingSince, id],
        );
    }
  }
}
