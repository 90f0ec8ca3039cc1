import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { DataSource } from 'typeorm';
import { DatabaseConfig } from '../../config';
import { ENTITIES } from '../../entities';
import { createDataSource } from '../data-source.factory';

/** A database made for one test file, and how to throw it away. */
export interface TestDatabase {
  name: 'sqlite' | 'mysql';
  config: DatabaseConfig;
  drop(): Promise<void>;
}

const MYSQL = {
  host: process.env.BATON_TEST_MYSQL_HOST ?? '127.0.0.1',
  port: Number(process.env.BATON_TEST_MYSQL_PORT ?? 3306),
  user: process.env.BATON_TEST_MYSQL_USER ?? 'root',
  password: process.env.BATON_TEST_MYSQL_PASSWORD ?? '',
};

/** A fresh SQLite file in a temp folder. */
export function sqliteTestDatabase(): TestDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'baton-db-'));
  return {
    name: 'sqlite',
    config: { type: 'sqlite', path: join(dir, 'baton.sqlite') },
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * A fresh MySQL/MariaDB database on the machine's server. Fails — never skips — when the server
 * cannot be reached, saying how to start it.
 */
export async function mysqlTestDatabase(): Promise<TestDatabase> {
  const database = `baton_it_${randomBytes(5).toString('hex')}`;
  let conn;
  try {
    conn = await createConnection({ ...MYSQL, connectTimeout: 3000 });
  } catch (err) {
    throw new Error(
      `MariaDB/MySQL at ${MYSQL.host}:${MYSQL.port} is not reachable (${(err as Error).message}); start it with \`bash scripts/services.sh\``,
    );
  }
  await conn.query(`CREATE DATABASE ${database} CHARACTER SET utf8mb4`);
  await conn.end();
  return {
    name: 'mysql',
    config: { type: 'mysql', ...MYSQL, database, poolSize: 10 },
    drop: async () => {
      const c = await createConnection(MYSQL);
      await c.query(`DROP DATABASE IF EXISTS ${database}`);
      await c.end();
    },
  };
}

/**
 * A SQLite database of its own, connected with every entity and migrated: what an int spec of
 * the stores builds on. `close()` it in `afterAll`.
 */
export async function migratedSqlite(): Promise<{ ds: DataSource; close(): Promise<void> }> {
  const db = sqliteTestDatabase();
  const ds = createDataSource(db.config, ENTITIES);
  const close = async (): Promise<void> => {
    if (ds.isInitialized) await ds.destroy();
    await db.drop();
  };
  try {
    await ds.initialize();
    await ds.runMigrations();
  } catch (err) {
    await close();
    throw err;
  }
  return { ds, close };
}
