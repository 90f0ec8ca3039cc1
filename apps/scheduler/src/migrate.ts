/**
 * `npm run migrate`: runs the scheduler's migrations against the configured database (BATON_DB...)
 * and exits. Idempotent; a shared MySQL is migrated this way before schedulers start.
 */
import 'reflect-metadata';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadSchedulerConfig } from './config';
import { createDataSource } from './database';
import { ENTITIES } from './entities';

async function main(): Promise<void> {
  const { database } = loadSchedulerConfig({
    ...process.env,
    BATON_AUTH_MODE: process.env.BATON_AUTH_MODE ?? 'none',
  });
  if (database.type === 'sqlite') mkdirSync(dirname(database.path), { recursive: true });
  const ds = createDataSource(database, ENTITIES);
  await ds.initialize();
  const ran = await ds.runMigrations({ transaction: 'each' });
  console.log(
    ran.length ? `migrated: ${ran.map((m) => m.name).join(', ')}` : 'schema is up to date',
  );
  await ds.destroy();
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
