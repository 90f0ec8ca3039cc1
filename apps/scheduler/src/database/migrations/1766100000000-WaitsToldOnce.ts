import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A waiting task is told once: what it waits for now (`baton_task.waiting`, JSON: reason, since,
 * last check, checks), and a lifecycle row repeated for the same reason is updated in place
 * (`repeats`, `last_at`) instead of a row per check. Rows of before are single.
 */
export class WaitsToldOnce1766100000000 implements MigrationInterface {
  name = 'WaitsToldOnce1766100000000';

  async up(q: QueryRunner): Promise<void> {
    // Plain ALTERs, which both drivers run in place: TypeORM's addColumn rebuilds a SQLite table,
    // and with it would drop the name index's triggers on baton_task.
    await q.query('ALTER TABLE baton_task ADD COLUMN waiting VARCHAR(1500) NULL');
    await q.query('ALTER TABLE baton_task_event ADD COLUMN repeats INT NOT NULL DEFAULT 1');
    await q.query('ALTER TABLE baton_task_event ADD COLUMN last_at BIGINT NULL');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('baton_task_event', 'last_at');
    await q.dropColumn('baton_task_event', 'repeats');
    await q.dropColumn('baton_task', 'waiting');
  }
}
