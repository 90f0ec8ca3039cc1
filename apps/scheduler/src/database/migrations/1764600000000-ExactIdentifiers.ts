import { MigrationInterface, QueryRunner } from 'typeorm';

/** Binary and without padding: `'a' = 'A'` and `'a' = 'a '` are both false. */
const EXACT = ['utf8mb4_nopad_bin', 'utf8mb4_0900_bin'];

/**
 * Ids, names and keys compare exactly on MySQL and MariaDB, as they do on SQLite. Their default
 * collations ignore case (and, padding, trailing spaces): a lower-cased task id found the task, a
 * `DEMO.ECHO` changed `demo.echo`, `<id>%20` answered. Every table (and the database's default,
 * for tables made later) moves to a binary collation without padding: MariaDB's
 * `utf8mb4_nopad_bin`, MySQL 8's `utf8mb4_0900_bin`, or `utf8mb4_bin` on a server with neither.
 * Rebuilds each table once: on a large database, run `npm run migrate` in a quiet hour.
 */
export class ExactIdentifiers1764600000000 implements MigrationInterface {
  name = 'ExactIdentifiers1764600000000';

  async up(q: QueryRunner): Promise<void> {
    if (q.connection.options.type !== 'mysql') return;
    const have = (await q.query(
      "SELECT collation_name AS name FROM information_schema.collations WHERE character_set_name = 'utf8mb4'",
    )) as { name: string }[];
    const names = new Set(have.map((c) => c.name));
    await this.convert(q, EXACT.find((c) => names.has(c)) ?? 'utf8mb4_bin');
  }

  async down(q: QueryRunner): Promise<void> {
    if (q.connection.options.type !== 'mysql') return;
    await this.convert(q, 'utf8mb4_general_ci');
  }

  private async convert(q: QueryRunner, collation: string): Promise<void> {
    await q.query(`ALTER DATABASE CHARACTER SET utf8mb4 COLLATE ${collation}`);
    const tables = (await q.query(
      "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'",
    )) as { name: string }[];
    for (const { name } of tables)
      await q.query(
        `ALTER TABLE \`${name.replace(/`/g, '``')}\` CONVERT TO CHARACTER SET utf8mb4 COLLATE ${collation}`,
      );
  }
}
