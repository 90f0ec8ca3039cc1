import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock, backendUnreachable } from '../common';

/**
 * Opens a data source made by `make`, trying again while the server does not answer (refused,
 * timed out, reset) for at most `waitMs`: a scheduler started before its database is up, or while
 * the box is too busy to finish a handshake in time, waits for it instead of exiting at once. Any
 * other error (a wrong password, a missing database) ends the start at once. Each try gets a new
 * data source: a failed `initialize` has closed its pool.
 */
export async function openDataSource(
  make: () => DataSource,
  waitMs: number,
  clock: Clock,
  logger = new Logger('Database'),
): Promise<DataSource> {
  const until = clock.monotonic() + waitMs;
  for (let pause = 250; ; pause = Math.min(pause * 2, 5000)) {
    const ds = make();
    try {
      return await ds.initialize();
    } catch (err) {
      const left = until - clock.monotonic();
      if (!backendUnreachable(err) || left <= 0) throw err;
      const wait = Math.min(pause, left);
      logger.warn(
        `the database did not answer (${err instanceof Error ? err.message : String(err)}): trying again in ${wait} ms, for ${Math.ceil(left / 1000)} s more (BATON_MYSQL_START_WAIT_MS)`,
      );
      await clock.sleep(wait);
    }
  }
}
