import { DataSource } from 'typeorm';

/** How long a migration waits for another one under way before it gives up (seconds). */
const WAIT_SECONDS = 900;

/**
 * Runs the pending migrations, on MySQL one migrator at a time: the run holds a named lock of
 * the server (`GET_LOCK`, per database) on a connection of its own, so scheduler pods whose init
 * step migrates (several at once in a rollout), a migration Job and a scheduler with
 * BATON_DB_MIGRATE=true can start together: the first applies what is pending, the others wait,
 * then find the schema current. The lock goes with the connection if the process dies. SQLite is
 * one file of one process: it needs no lock. Answers the names of the migrations this run applied.
 */
export async function runMigrationsLocked(ds: DataSource): Promise<string[]> {
  const run = async (): Promise<string[]> =>
    (await ds.runMigrations({ transaction: 'each' })).map((m) => m.name);
  if (ds.options.type !== 'mysql') return run();
  const lock = `baton_migrate:${String(ds.options.database)}`.slice(0, 64);
  const holder = ds.createQueryRunner();
  await holder.connect();
  try {
    const [row] = (await holder.query('SELECT GET_LOCK(?, ?) AS got', [lock, WAIT_SECONDS])) as {
      got: number | string | null;
    }[];
    if (Number(row?.got) !== 1)
      throw new Error(
        `another migration held the lock "${lock}" for ${WAIT_SECONDS} s: is one stuck? (SELECT IS_USED_LOCK('${lock}') names its connection)`,
      );
    try {
      return await run();
    } finally {
      await holder.query('SELECT RELEASE_LOCK(?)', [lock]);
    }
  } finally {
    await holder.release();
  }
}
