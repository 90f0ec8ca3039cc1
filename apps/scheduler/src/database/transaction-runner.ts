import { Injectable } from '@nestjs/common';
import { KeyedMutex } from '@baton/task-contract';
import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '@baton/time';

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
 * a few times, after a short random pause. Work given to `run` is database work only, and work
 * given to `single` one statement, so running it again is safe.
 */
@Injectable()
export class TransactionRunner {
  private readonly serial: KeyedMutex | undefined;
  /** What to do once each running transaction commits, by its manager (dropped if it rolls back). */
  private readonly commitHooks = new WeakMap<EntityManager, (() => void)[]>();

  constructor(
    private readonly db: DataSource,
    private readonly clock: Clock,
  ) {
    this.serial = db.options.type === 'better-sqlite3' ? new KeyedMutex() : undefined;
  }

  /**
   * One statement outside a transaction. On SQLite it still waits for a running transaction:
   * on the single connection it would otherwise land inside it (and roll back with it). On MySQL
   * a statement the server rolled back (a deadlock victim, a lock wait that timed out) changed
   * nothing, so it runs again as a transaction would: a worker's heartbeat or progress must not
   * come back as a 500 because two writes met.
   */
  single<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (this.serial) return this.serial.run('sqlite', () => work(this.db.manager));
    return this.again(() => work(this.db.manager));
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

  /**
   * Runs `hook` once the transaction of `m` has committed (never if it rolls back, and once for
   * the try that commits when a deadlock made it run again): for counting what committed. Outside
   * a transaction of this runner, at once.
   */
  afterCommit(m: EntityManager, hook: () => void): void {
    const hooks = this.commitHooks.get(m);
    if (hooks) hooks.push(hook);
    else hook();
  }

  async run<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (this.serial) return this.serial.run('sqlite', () => this.once(work));
    return this.again(() => this.once(work));
  }

  /** `attempt` again, a few times after a short random pause, while MySQL rolls it back whole. */
  private async again<T>(attempt: () => Promise<T>): Promise<T> {
    for (let tries = 1; ; tries++) {
      try {
        return await attempt();
      } catch (err) {
        if (tries >= TRIES || !rolledBack(err)) throw err;
        await this.clock.sleep(5 + Math.random() * 20 * tries);
      }
    }
  }

  /** One transaction, then its commit hooks. */
  private async once<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    const hooks: (() => void)[] = [];
    const result = await this.db.transaction((m) => {
      this.commitHooks.set(m, hooks);
      return work(m);
    });
    for (const hook of hooks) {
      try {
        hook();
      } catch {
        // A hook counts what committed: it must not turn a committed write into a failure.
      }
    }
    return result;
  }
}
