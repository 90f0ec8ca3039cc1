import { randomUUID } from 'node:crypto';
import { Clock, systemClock } from '@baton/time';
import { createPool, Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { BaseLockProvider } from '../base-lock.provider';
import { HeldKey } from '../held-key.interface';
import { MysqlLockConfig } from '../lock-config.interface';
import { LockErrorCode, LockException } from '../lock.exception';
import { LockState } from '../lock-provider.interface';
import { freeState, splitTokenAndLabel, tokenWithLabel } from '../lock-state';
import { Backoff, KeyWaiters, sleep } from '../wait';

/** `<holder token> <label>`: 36 + 1 + MAX_HOLDER_LABEL characters, and a little room. */
const LABEL_COLUMN = 'holder_label VARCHAR(240) CHARACTER SET utf8mb4 NULL';

/** The database's clock in ms: every expiry is judged by one clock, not by each client's. */
const NOW_MS = 'CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS UNSIGNED)';

/**
 * Leases in one MySQL/MariaDB table. A key's row is never deleted, so its `fence` column is the
 * key's persistent fence sequence: every successful take bumps it in the same UPDATE that makes
 * the caller holder, and returns it through LAST_INSERT_ID(expr) (one round trip, no gap locks).
 * MySQL has no notifications: waiting is backoff polling (plus an in-process wake-up). The
 * holder's label is kept in `holder_label` as `<holder token> <label>`, written by that same
 * UPDATE; a label whose token is not the row's holder (one left by an expired holding, taken
 * over by a build that does not write labels) is not shown.
 */
export class MysqlLockDriver extends BaseLockProvider {
  readonly driver = 'mysql' as const;
  private readonly pool: Pool;
  private readonly table: string;
  private readonly maxPollMs: number;
  private readonly waiters: KeyWaiters;
  private ready: Promise<void> | undefined;
  /** False when the table has no `holder_label` and the server refused to add it: no labels. */
  private labels = true;

  constructor(config: MysqlLockConfig, clock: Clock = systemClock) {
    super(clock);
    this.waiters = new KeyWaiters(clock);
    this.table = config.table ?? 'baton_lock_lease';
    if (!/^[A-Za-z0-9_]+$/.test(this.table)) {
      throw new LockException(LockErrorCode.INVALID_CONFIG, `bad MySQL table name "${this.table}"`);
    }
    this.maxPollMs = config.maxPollMs ?? 200;
    this.pool = createPool({
      host: config.host,
      port: config.port ?? 3306,
      user: config.user,
      password: config.password,
      database: config.database,
      connectionLimit: config.poolSize ?? 4,
      // BIGINT fences come back as numbers (safe below 2^53).
      supportBigNumbers: true,
      bigNumberStrings: false,
      connectTimeout: 5000,
    });
  }

  async acquireKey(
    key: string,
    ttlMs: number,
    deadline: number,
    label?: string,
  ): Promise<HeldKey | null> {
    await this.ensureTable();
    const holder = randomUUID();
    const backoff = new Backoff(10, this.maxPollMs, this.clock);
    // The row must exist before the conditional UPDATE; INSERT IGNORE is a no-op when it does.
    await this.exec(
      `INSERT IGNORE INTO ${this.table} (lock_key, holder, fence, expires_at) VALUES (?, NULL, 0, 0)`,
      [key],
    );
    for (;;) {
      if (this.closed) throw new LockException(LockErrorCode.CLOSED, 'mysql provider is closed');
      const epoch = this.waiters.epoch(key);
      // The database starts the TTL after this; the holder's clock must not start it earlier.
      const attemptAt = this.clock.now();
      const labelled = label === undefined ? null : tokenWithLabel(holder, label);
      const result = await this.exec(
        `UPDATE ${this.table}
            SET holder = ?, fence = LAST_INSERT_ID(fence + 1), expires_at = ${NOW_MS} + ?
                ${this.labels ? ', holder_label = ?' : ''}
          WHERE lock_key = ? AND (holder IS NULL OR expires_at <= ${NOW_MS})`,
        this.labels ? [holder, ttlMs, labelled, key] : [holder, ttlMs, key],
      );
      if (result.affectedRows === 1) {
        return this.heldKey(key, holder, Number(result.insertId), attemptAt);
      }
      if (this.clock.now() >= deadline) return null;
      await this.waiters.wait(key, backoff.next(deadline), epoch);
    }
  }

  /** The row as the database sees it, its expiry judged by the database's clock. */
  async inspectKey(key: string): Promise<LockState> {
    await this.ensureTable();
    const rows = await this.exec<RowDataPacket[]>(
      `SELECT holder, ${this.labels ? 'holder_label' : 'NULL AS holder_label'}, fence,
              CAST(expires_at AS SIGNED) - CAST(${NOW_MS} AS SIGNED) AS remaining_ms
         FROM ${this.table} WHERE lock_key = ?`,
      [key],
    );
    const row = rows[0] as
      | { holder: string | null; holder_label: string | null; fence: number; remaining_ms: number }
      | undefined;
    const remaining = Number(row?.remaining_ms ?? 0);
    if (!row || row.holder === null || remaining <= 0) return freeState(key);
    const labelled = row.holder_label === null ? null : splitTokenAndLabel(row.holder_label);
    return {
      key,
      held: true,
      holder: labelled?.token === row.holder ? labelled.label : null,
      token: row.holder,
      fence: Number(row.fence),
      expiresAt: new Date(this.clock.now() + remaining),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.waiters.notifyAll();
    await this.pool.end();
  }

  private heldKey(key: string, holder: string, fence: number, takenAt: number): HeldKey {
    return {
      key,
      fence,
      takenAt,
      extend: async (ttlMs) => {
        const r = await this.exec(
          `UPDATE ${this.table} SET expires_at = ${NOW_MS} + ?
            WHERE lock_key = ? AND holder = ? AND expires_at > ${NOW_MS}`,
          [ttlMs, key, holder],
        );
        if (r.affectedRows !== 1) throw notHolder(key);
      },
      release: async () => {
        // An expired holder is no holder: its release must not look like success.
        const r = await this.exec(
          `UPDATE ${this.table} SET holder = NULL, expires_at = 0
            WHERE lock_key = ? AND holder = ? AND expires_at > ${NOW_MS}`,
          [key, holder],
        );
        if (r.affectedRows !== 1) throw notHolder(key);
        this.waiters.notify(key);
      },
      // No server-side push in MySQL: loss shows up as a refused extend (the renewer reports it).
      setLostHandler: () => undefined,
    };
  }

  private ensureTable(): Promise<void> {
    // Until the scheduler's migrations own this table, the driver creates it idempotently.
    this.ready ??= this.exec(
      `CREATE TABLE IF NOT EXISTS ${this.table} (
         lock_key VARCHAR(191) NOT NULL PRIMARY KEY,
         holder CHAR(36) NULL,
         fence BIGINT UNSIGNED NOT NULL DEFAULT 0,
         expires_at BIGINT UNSIGNED NOT NULL DEFAULT 0,
         ${LABEL_COLUMN}
       ) ENGINE=InnoDB`,
      [],
    ).then(() => this.addLabelColumn());
    this.ready.catch(() => (this.ready = undefined));
    return this.ready;
  }

  /**
   * A table made before labels existed gets the column (once; a concurrent add is fine). When
   * the server refuses the ALTER (a user without the right), locks work on without labels.
   */
  private async addLabelColumn(): Promise<void> {
    const found = await this.exec<RowDataPacket[]>(
      `SELECT 1 FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'holder_label'`,
      [this.table],
    );
    if (found.length > 0) return;
    try {
      await this.exec(`ALTER TABLE ${this.table} ADD COLUMN ${LABEL_COLUMN}`, []);
    } catch (error) {
      const code = (error as LockException).data?.code;
      // Another process added it between the look and the ALTER.
      if (code === 'ER_DUP_FIELDNAME') return;
      // The server answered no (not a lost connection, which is retried on next use).
      if (typeof code === 'string' && code.startsWith('ER_')) this.labels = false;
      else throw error;
    }
  }

  private async exec<T extends ResultSetHeader | RowDataPacket[] = ResultSetHeader>(
    sql: string,
    params: unknown[],
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        const [result] = await this.pool.execute<T>(sql, params as never[]);
        return result;
      } catch (error) {
        // Row-lock deadlocks between concurrent takers are retryable by definition.
        const code = (error as { code?: string }).code;
        if ((code === 'ER_LOCK_DEADLOCK' || code === 'ER_LOCK_WAIT_TIMEOUT') && attempt < 5) {
          await sleep(5 + Math.random() * 20, this.clock);
          continue;
        }
        throw new LockException(
          LockErrorCode.BACKEND_UNAVAILABLE,
          `MySQL lock query failed: ${(error as Error).message}`,
          { code },
          { cause: error },
        );
      }
    }
  }
}

function notHolder(key: string): LockException {
  return new LockException(LockErrorCode.NOT_HOLDER, `"${key}" is not held by this lease`, { key });
}
