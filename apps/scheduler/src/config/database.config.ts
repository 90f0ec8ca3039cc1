import { Env, int, oneOf, required } from './env-values';

/** Where the scheduler keeps its state: an SQLite file (embedded default) or MySQL/MariaDB. */
export type DatabaseConfig =
  | { type: 'sqlite'; path: string }
  | {
      type: 'mysql';
      host: string;
      port: number;
      user: string;
      password: string;
      database: string;
      poolSize: number;
      /** A connection not made within this fails (BATON_MYSQL_CONNECT_TIMEOUT_MS). */
      connectTimeoutMs?: number;
      /** A statement not answered within this fails (BATON_MYSQL_QUERY_TIMEOUT_MS). */
      queryTimeoutMs?: number;
      /** How long a start waits for a server that does not answer (BATON_MYSQL_START_WAIT_MS). */
      startWaitMs?: number;
    };

/**
 * The watch on the shared backends (MySQL, the Redis queue): a round trip every `intervalMs`; one
 * not answered within `timeoutMs` (or refused) marks the backend down until one is answered.
 */
export interface BackendCheckConfig {
  intervalMs: number;
  timeoutMs: number;
}

export function database(env: Env): DatabaseConfig & { migrate: boolean } {
  const type = oneOf(env, 'BATON_DB', ['sqlite', 'mysql'] as const, 'sqlite');
  if (type === 'sqlite') {
    // The embedded default migrates itself; a shared MySQL is migrated on purpose (npm run migrate).
    return {
      type,
      path: env.BATON_DB_PATH ?? '.data/baton.sqlite',
      migrate: env.BATON_DB_MIGRATE !== 'false',
    };
  }
  return {
    type,
    host: env.BATON_MYSQL_HOST ?? '127.0.0.1',
    port: int(env, 'BATON_MYSQL_PORT', 3306, 1, 65535),
    user: env.BATON_MYSQL_USER ?? 'root',
    password: env.BATON_MYSQL_PASSWORD ?? '',
    database: required(env, 'BATON_MYSQL_DATABASE', 'when BATON_DB=mysql'),
    poolSize: int(env, 'BATON_MYSQL_POOL', 20, 1, 500),
    connectTimeoutMs: int(env, 'BATON_MYSQL_CONNECT_TIMEOUT_MS', 5000, 100, 600_000),
    queryTimeoutMs: int(env, 'BATON_MYSQL_QUERY_TIMEOUT_MS', 30_000, 100, 3_600_000),
    startWaitMs: int(env, 'BATON_MYSQL_START_WAIT_MS', 60_000, 0, 3_600_000),
    migrate: env.BATON_DB_MIGRATE === 'true',
  };
}

export function backendCheck(env: Env): BackendCheckConfig {
  return {
    intervalMs: int(env, 'BATON_BACKEND_CHECK_MS', 500, 50, 60_000),
    timeoutMs: int(env, 'BATON_BACKEND_TIMEOUT_MS', 1500, 100, 60_000),
  };
}
