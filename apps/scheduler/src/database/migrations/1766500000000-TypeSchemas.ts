import { MigrationInterface, QueryRunner } from 'typeorm';

/** The JSON Schemas a type's workers declare for its params and its result. */
export class TypeSchemas1766500000000 implements MigrationInterface {
  name = 'TypeSchemas1766500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE baton_task_type ADD COLUMN params_schema TEXT NULL');
    await q.query('ALTER TABLE baton_task_type ADD COLUMN result_schema TEXT NULL');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('baton_task_type', 'result_schema');
    await q.dropColumn('baton_task_type', 'params_schema');
  }
}
