import { DataSource } from 'typeorm';
import { ENTITIES } from '../entities';
import { MIGRATIONS, createDataSource } from './data-source.factory';
import { runMigrationsLocked } from './migrate-locked';
import { TestDatabase, mysqlTestDatabase } from './testing/test-databases';

/**
 * Migrators started together on one empty MariaDB database (scheduler pods whose init step
 * migrates, in a rollout of several replicas): one applies every migration, the others wait for
 * it and find the schema current; none fails, and each migration is applied once.
 */
describe('runMigrationsLocked on MariaDB', () => {
  let db: TestDatabase;
  const sources: DataSource[] = [];

  beforeAll(async () => {
    db = await mysqlTestDatabase();
  });

  afterAll(async () => {
    for (const ds of sources) if (ds.isInitialized) await ds.destroy();
    await db?.drop();
  });

  it('applies each migration once when three migrators start at the same moment', async () => {
    for (let i = 0; i < 3; i++) {
      const ds = createDataSource(db.config, ENTITIES);
      await ds.initialize();
      sources.push(ds);
    }
    const runs = await Promise.all(sources.map((ds) => runMigrationsLocked(ds)));
    // One run applied them all, in order; the others found nothing pending.
    const applied = runs.filter((r) => r.length > 0);
    expect(applied).toHaveLength(1);
    expect(applied[0]).toHaveLength(MIGRATIONS.length);
    expect(runs.filter((r) => r.length === 0)).toHaveLength(2);
    const rows = (await sources[0].query('SELECT name FROM migrations ORDER BY id')) as {
      name: string;
    }[];
    expect(rows.map((r) => r.name)).toEqual(applied[0]);
    expect(new Set(rows.map((r) => r.name)).size).toBe(rows.length);
    // And the lock is free again: another run takes it at once and has nothing to do.
    expect(await runMigrationsLocked(sources[1])).toEqual([]);
  });
});
