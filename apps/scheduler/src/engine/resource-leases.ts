import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import {
  LOCK_PROVIDER,
  Lease,
  LockErrorCode,
  LockException,
  LockProvider,
  MAX_HOLDER_LABEL,
} from '@baton/locks';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';

/** A task's lock keys live under this prefix in the lock backend. */
const PREFIX = 'resource:';
/** The label of a task's lease: `task <id> on scheduler <instance>`. Task ids have no spaces. */
const LABEL = /^task (\S+) on scheduler /;

/**
 * How a start that found the key held by the task's own lease (kept by the instance of an earlier
 * drive) words the wait; that instance's Checker lets the lease go when it reads it on the row.
 */
export const OWN_LEASE_WAIT = "lock key held by this task's own lease from an earlier drive";

/** One lock key of a task, as the lock backend sees it now. */
export interface LockKeyState {
  /** The task's key (without the backend prefix). */
  key: string;
  held: boolean;
  /** The holding's label, or the backend's token of a holding that carries none; null when free. */
  holder: string | null;
  /** The task the label names (read from the label, never guessed); null otherwise. */
  holderTaskId: string | null;
  fence: number | null;
  expiresAt: Date | null;
}

/**
 * The `lock_keys` leases a task holds from PREPARE to a final state (docs/architecture.md),
 * renewed automatically by the lock provider while this process lives; a dead scheduler's leases
 * run out on their own. All keys of a task are taken at once, in a fixed order, or none.
 */
@Injectable()
export class ResourceLeases implements OnApplicationShutdown {
  private readonly logger = new Logger('ResourceLeases');
  private readonly held = new Map<string, Lease>();
  /**
   * When each held lease was last handed to a start, as a number that only grows (never reset,
   * so a lease lost and taken again reads as a new use): a use the Checker did not see.
   */
  private readonly uses = new Map<string, number>();
  private useSeq = 0;

  constructor(
    @Inject(LOCK_PROVIDER) private readonly locks: LockProvider,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  /** True when the task holds (or now took) every key; false when one is held elsewhere. */
  async acquire(taskId: string, keys: readonly string[], ttlMs: number): Promise<boolean> {
    const current = this.held.get(taskId);
    if (current && !current.lost) {
      this.uses.set(taskId, ++this.useSeq);
      return true;
    }
    const lease = await this.locks.tryAcquire(
      keys.map((k) => PREFIX + k),
      { ttlMs, autoRenew: true, holder: this.labelOf(taskId) },
    );
    if (!lease) return false;
    lease.onLost((reason) => {
      // The fence still protects the resource; the task will be postponed at its next step.
      this.logger.warn(`task ${taskId} lost its lease on ${keys.join(', ')} (${reason})`);
      if (this.held.get(taskId) === lease) this.forget(taskId);
      // Lost here is not always gone there: a connection this process thought dead (a stall past
      // the watchdog's bound) may have kept its session, and with it the key, for as long as the
      // process lives. Forgotten without a release, nothing would ever give that key back: the
      // task would end and every other task on the key wait forever. Let it go there too; a key
      // the backend had already dropped answers "not the holder", which is fine.
      void lease
        .release()
        .catch((err: unknown) =>
          this.logger.warn(`letting go of the lost lease of ${taskId}: ${String(err)}`),
        );
    });
    // Lost already (a ZooKeeper session that lapsed while the keys were taken): the listener
    // above would never hear it, and the start must not go on as if it held them.
    if (lease.lost) {
      void lease.release().catch(() => undefined);
      return false;
    }
    this.held.set(taskId, lease);
    this.uses.set(taskId, ++this.useSeq);
    this.logger.debug(`task ${taskId} took ${keys.join(', ')} (fence ${lease.fence})`);
    return true;
  }

  async release(taskId: string): Promise<void> {
    const lease = this.held.get(taskId);
    if (!lease) return;
    this.forget(taskId);
    this.logger.debug(`task ${taskId} lets go of ${lease.keys.join(', ')}`);
    await lease
      .release()
      .catch((err: unknown) =>
        this.logger.warn(`releasing the leases of ${taskId}: ${String(err)}`),
      );
  }

  /**
   * Who holds each of `keys` now, asked of the lock backend (any instance's lease shows, not only
   * this process's). NOT_READY when the backend cannot say.
   */
  async inspect(keys: readonly string[]): Promise<LockKeyState[]> {
    if (keys.length === 0) return [];
    let states;
    try {
      states = await this.locks.inspect(keys.map((k) => PREFIX + k));
    } catch (error) {
      if (
        !LockException.is(error, LockErrorCode.BACKEND_UNAVAILABLE) &&
        !LockException.is(error, LockErrorCode.CLOSED)
      )
        throw error;
      throw new ContractException(
        ContractErrorCode.NOT_READY,
        `the lock backend (${this.locks.driver}) could not say who holds the keys: ${error.message}`,
        { lock_driver: this.locks.driver },
      );
    }
    return states.map((s) => ({
      key: s.key.slice(PREFIX.length),
      held: s.held,
      holder: s.held ? (s.holder ?? s.token) : null,
      holderTaskId: (s.held && s.holder !== null && LABEL.exec(s.holder)?.[1]) || null,
      fence: s.fence,
      expiresAt: s.expiresAt,
    }));
  }

  /**
   * The task whose labelled holding keeps one of `keys` now (the first such key); undefined when
   * none is labelled or the backend cannot say (the caller waits either way).
   */
  async holderOf(keys: readonly string[]): Promise<string | undefined> {
    try {
      const states = await this.inspect(keys);
      return states.find((s) => s.holderTaskId !== null)?.holderTaskId ?? undefined;
    } catch {
      return undefined;
    }
  }

  /** `task <id> on scheduler <instance>`, cut to the lock provider's limit. */
  private labelOf(taskId: string): string {
    return `task ${taskId} on scheduler ${this.config.instanceId}`.slice(0, MAX_HOLDER_LABEL);
  }

  /** Tasks this process holds leases for (the Checker frees those whose task ended elsewhere). */
  heldTaskIds(): string[] {
    return [...this.held.keys()];
  }

  /**
   * How many starts the task's lease here has been handed to: read before and after a look at
   * the task's row, a change says a start used it meanwhile (the row read may predate it).
   */
  usesOf(taskId: string): number {
    return this.uses.get(taskId) ?? 0;
  }

  private forget(taskId: string): void {
    this.held.delete(taskId);
    this.uses.delete(taskId);
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.held.keys()].map((id) => this.release(id)));
  }
}
