import { Injectable } from '@nestjs/common';
import { KeyedMutex } from '@baton/task-contract';
import { DataSource, EntityManager } from 'typeorm';

/**
 * Runs database transactions. SQLite (better-sqlite3) has one connection, so two transactions
 * may not overlap in a process: they queue here. MySQL gets real concurrency from its pool.
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

  run<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (!this.serial) return this.db.transaction(work);
    return this.serial.run('sqlite', () => this.db.transaction(work));
  }
}
