import { Injectable } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { Clock } from '../common';
import { WorkersRepository } from './workers.repository';
import { WorkerView, WorkersService } from './workers.service';

/**
 * What people set on a worker: a drain (no new tasks; what it has finishes there) and a blacklist
 * by hand (no tasks at all, with a reason, until a time or until lifted). Both are on the worker's
 * row, so every instance follows within a refresh of its view of the registry (a second), and a
 * worker that registers again or heartbeats keeps them.
 */
@Injectable()
export class WorkerControl {
  constructor(
    private readonly repo: WorkersRepository,
    private readonly workers: WorkersService,
    private readonly clock: Clock,
  ) {}

  /** Drains the worker; a worker already draining keeps the time it started. */
  async drain(workerId: string): Promise<WorkerView> {
    const w = await this.repo.find(workerId);
    if (!w) throw this.workers.notRegistered(workerId);
    if (w.drainingSince === null)
      await this.changed(workerId, () => this.repo.setDraining(workerId, this.clock.now()));
    return this.workers.get(workerId);
  }

  async undrain(workerId: string): Promise<WorkerView> {
    await this.changed(workerId, () => this.repo.setDraining(workerId, null));
    return this.workers.get(workerId);
  }

  /** Blacklists the worker by hand until `until` (epoch ms; null: until lifted). */
  async blacklist(workerId: string, reason: string, until: number | null): Promise<WorkerView> {
    const now = this.clock.now();
    if (until !== null && until <= now)
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `until must be in the future (it is ${new Date(now).toISOString()} now)`,
        { until: new Date(until).toISOString() },
      );
    await this.changed(workerId, () =>
      this.repo.setManualBlacklist(workerId, { reason, since: now, until }),
    );
    return this.workers.get(workerId);
  }

  /** Lifts the blacklist by hand, and one after call failures as well: the worker is trusted again. */
  async lift(workerId: string): Promise<WorkerView> {
    await this.changed(workerId, () => this.repo.liftBlacklists(workerId));
    return this.workers.get(workerId);
  }

  private async changed(workerId: string, write: () => Promise<boolean>): Promise<void> {
    if (!(await write())) throw this.workers.notRegistered(workerId);
    this.workers.forget();
  }
}
