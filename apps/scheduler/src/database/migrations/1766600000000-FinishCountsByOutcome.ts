import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Finished tasks counted by outcome: a FINISH count's key becomes `FINISH:<outcome>` (at most 16
 * characters, as the column allows), filled here from the finished tasks stored.
 */
export class FinishCountsByOutcome1766600000000 implements MigrationInterface {
  name = 'FinishCountsByOutcome1766600000000';

  async up(q: QueryRunner): Promise<void> {
    const key =
      q.connection.options.type === 'better-sqlite3'
        ? "CASE WHEN outcome IS NULL THEN 'FINISH' ELSE 'FINISH:' || outcome END"
        : "CASE WHEN outcome IS NULL THEN 'FINISH' ELSE CONCAT('FINISH:', outcome) END";
    await q.query("DELETE FROM baton_task_count WHERE status = 'FINISH'");
    await q.query(
      `INSERT INTO baton_task_count (shard, task_type, status, n)
       SELECT 0, task_type, ${key}, COUNT(*) FROM baton_task WHERE status = 'FINISH'
       GROUP BY task_type, ${key}`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query("DELETE FROM baton_task_count WHERE status LIKE 'FINISH%'");
    await q.query(
      `INSERT INTO baton_task_count (shard, task_type, status, n)
       SELECT 0, task_type, 'FINISH', COUNT(*) FROM baton_task WHERE status = 'FINISH'
       GROUP BY task_type`,
    );
  }
}
