import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The worker contract each worker registered with. Workers registered before named none: 1.0.0,
 * the version that sent none.
 */
export class WorkerContractVersion1766200000000 implements MigrationInterface {
  name = 'WorkerContractVersion1766200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      "ALTER TABLE baton_worker ADD COLUMN contract_version VARCHAR(20) NOT NULL DEFAULT '1.0.0'",
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('baton_worker', 'contract_version');
  }
}
