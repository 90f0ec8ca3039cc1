import { Injectable } from '@nestjs/common';
import { KeyedMutex } from '@baton/task-contract';
import { DataSource, EntityManager } from 'typeorm';

/** MySQL rolled the whole transaction back: deadlock (1213), or a lock wait that timed out (1205). */
const ROLLED_BACK = new Set([1213, 1205]);
const TRIES = 4;

function rolledBack(err: unknown): boolean {
  const driver = (err as { driverError?: { errno?: number } } | null)?.driverError;
  return ROLLED_BACK.has(driver?.errno ?? 0);
}

/**
 * Runs database transactions. SQLite (better-sqlite3) has one connection, so two transactions
 * may not overlap in a process: they queue here. MySQL gets real concurrency from its pool, and
 * with it deadlocks: a transaction the server chose as the victim (rolled back whole) runs again,
 * a few times, after a short random pause. Work given to `run` is database work only, so running
 * it again is safe.
 */
@Injectable()
export class TransactionRunner {
  private readonly serial: KeyedMutex | undefined;

  constructor(private readonly db: DataSource) {
    this.serial = db.options.type === 'better-sqlite3' ? new KeyedMutex() : undefined;
  }

  /**
   * One statement outside a transaction. On SQLite it still waits for a running transaction:
   * on the single connection it would otherwise land inside it (and roll back with it).
   */
  single<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (!this.serial) return work(this.db.manager);
    return this.serial.run('sqlite', () => work(this.db.manager));
  }

  /** One changing statement outside a transaction (as `single`); the rows it changed. */
  write(sql: string, params: unknown[]): Promise<number> {
    return this.single(async () => {
      const runner = this.db.createQueryRunner();
      try {
        return (await runner.query(sql, params, true)).affected ?? 0;
      } finally {
        await runner.release();
      }
    });
  }

  async run<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (this.serial) return this.serial.run('sqlite', () => this.db.transaction(work));
    for (let tries = 1; ; tries++) {
      try {
        return await this.db.transaction(work);
      } catch (err) {
        if (tries >= TRIES || !rolledBack(err)) throw err;
        await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * tries));
      }
    }
  }
}
