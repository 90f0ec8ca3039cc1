/**
 * `npm run migrate`: runs the scheduler's migrations against the configured database (BATON_DB...)
 * and exits. Idempotent; a shared MySQL is migrated this way before schedulers start.
 */
import 'reflect-metadata';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadSchedulerConfig } from './config';
import { systemClock } from '@baton/time';
import { createDataSource, openDataSource, runMigrationsLocked } from './database';
import { ENTITIES } from './entities';

async function main(): Promise<void> {
  const { database } = loadSchedulerConfig({
    ...process.env,
    BATON_AUTH_MODE: process.env.BATON_AUTH_MODE ?? 'none',
  });
  if (database.type === 'sqlite') mkdirSync(dirname(database.path), { recursive: true });
  // A migration Job started beside a database that is still coming up waits for it.
  const ds = await openDataSource(
    () => createDataSource(database, ENTITIES),
    database.type === 'mysql' ? (database.startWaitMs ?? 60_000) : 0,
    systemClock,
  );
  // One migrator at a time (several pods' init steps may start together): the others wait.
  const ran = await runMigrationsLocked(ds);
  console.log(ran.length ? `migrated: ${ran.join(', ')}` : 'schema is up to date');
  await ds.destroy();
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
