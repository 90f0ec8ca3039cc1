import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { LOCK_PROVIDER, Lease, LockProvider } from '@baton/locks';

/**
 * The `lock_keys` leases a task holds from PREPARE to a final state (docs/architecture.md),
 * renewed automatically by the lock provider while this process lives; a dead scheduler's leases
 * run out on their own. All keys of a task are taken at once, in a fixed order, or none.
 */
@Injectable()
export class ResourceLeases implements OnApplicationShutdown {
  private readonly logger = new Logger('ResourceLeases');
  private readonly held = new Map<string, Lease>();

  constructor(@Inject(LOCK_PROVIDER) private readonly locks: LockProvider) {}

  /** True when the task holds (or now took) every key; false when one is held elsewhere. */
  async acquire(taskId: string, keys: readonly string[], ttlMs: number): Promise<boolean> {
    const current = this.held.get(taskId);
    if (current && !current.lost) return true;
    const lease = await this.locks.tryAcquire(
      keys.map((k) => `resource:${k}`),
      { ttlMs, autoRenew: true },
    );
    if (!lease) return false;
    lease.onLost((reason) => {
      // The fence still protects the resource; the task will be postponed at its next step.
      this.logger.warn(`task ${taskId} lost its lease on ${keys.join(', ')} (${reason})`);
      this.held.delete(taskId);
    });
    this.held.set(taskId, lease);
    return true;
  }

  async release(taskId: string): Promise<void> {
    const lease = this.held.get(taskId);
    if (!lease) return;
    this.held.delete(taskId);
    await lease
      .release()
      .catch((err: unknown) =>
        this.logger.warn(`releasing the leases of ${taskId}: ${String(err)}`),
      );
  }

  /** Tasks this process holds leases for (the Checker frees those whose task ended elsewhere). */
  heldTaskIds(): string[] {
    return [...this.held.keys()];
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.held.keys()].map((id) => this.release(id)));
  }
}
