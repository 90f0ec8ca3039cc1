import { MigrationInterface, QueryRunner } from 'typeorm';

/** What a lost worker means for a type's attempts: `fail` (as before) or `recover`. */
export class TypeWorkerLost1766400000000 implements MigrationInterface {
  name = 'TypeWorkerLost1766400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      "ALTER TABLE baton_task_type ADD COLUMN on_worker_lost VARCHAR(8) NOT NULL DEFAULT 'fail'",
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('baton_task_type', 'on_worker_lost');
  }
}
