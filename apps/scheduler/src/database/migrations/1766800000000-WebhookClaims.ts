import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every instance sends webhooks: a message is claimed by one (`claimed_by`, until `claim_until`;
 * a claim whose instance died lapses, and the message is due again), and each attempt says which
 * instance made it (`sent_by`). Plain `ADD COLUMN`s: on SQLite TypeORM's `addColumn` copies the
 * whole table, and the message table can be long.
 */
export class WebhookClaims1766800000000 implements MigrationInterface {
  name = 'WebhookClaims1766800000000';

  async up(q: QueryRunner): Promise<void> {
    // MySQL commits each DDL statement: a start stopped between them runs again from here.
    if (!(await q.hasColumn('baton_webhook_message', 'claimed_by')))
      await q.query('ALTER TABLE baton_webhook_message ADD COLUMN claimed_by VARCHAR(100)');
    if (!(await q.hasColumn('baton_webhook_message', 'claim_until')))
      await q.query(
        'ALTER TABLE baton_webhook_message ADD COLUMN claim_until BIGINT NOT NULL DEFAULT 0',
      );
    if (!(await q.hasColumn('baton_webhook_attempt', 'sent_by')))
      await q.query('ALTER TABLE baton_webhook_attempt ADD COLUMN sent_by VARCHAR(100)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('baton_webhook_attempt', 'sent_by');
    await q.dropColumn('baton_webhook_message', 'claim_until');
    await q.dropColumn('baton_webhook_message', 'claimed_by');
  }
}
