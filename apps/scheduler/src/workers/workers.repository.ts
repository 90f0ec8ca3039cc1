import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { WorkerEntity } from './worker.entity';
import { ManualBlacklist, WorkerModel } from './worker.model';

const toModel = (e: WorkerEntity): WorkerModel => ({
  workerId: e.worker_id,
  url: e.url,
  taskTypes: e.task_types,
  version: e.version,
  contractVersion: e.contract_version ?? '1.0.0',
  capacity: e.capacity,
  lastHeartbeatAt: e.last_heartbeat_at,
  consecutiveFailures: e.consecutive_failures,
  blacklistedUntil: e.blacklisted_until,
  registeredAt: e.registered_at,
  drainingSince: e.draining_since ?? null,
  manualBlacklist:
    e.manual_blacklist_reason === null || e.manual_blacklist_reason === undefined
      ? null
      : {
          reason: e.manual_blacklist_reason,
          since: e.manual_blacklist_since ?? 0,
          until: e.manual_blacklist_until ?? null,
        },
});

@Injectable()
export class WorkersRepository {
  constructor(private readonly db: DataSource) {}

  async findAll(): Promise<WorkerModel[]> {
    return (await this.db.manager.find(WorkerEntity, { order: { worker_id: 'ASC' } })).map(toModel);
  }

  async find(workerId: string): Promise<WorkerModel | undefined> {
    const e = await this.db.manager.findOneBy(WorkerEntity, { worker_id: workerId });
    return e ? toModel(e) : undefined;
  }

  /**
   * Writes what a worker says of itself when it registers. What people set on it (a drain, a
   * blacklist by hand) is not written here: a restarted worker stays drained or blacklisted.
   */
  async saveRegistration(m: WorkerModel): Promise<void> {
    await this.db.manager.save(WorkerEntity, {
      worker_id: m.workerId,
      url: m.url,
      task_types: m.taskTypes,
      version: m.version,
      contract_version: m.contractVersion,
      capacity: m.capacity,
      last_heartbeat_at: m.lastHeartbeatAt,
      consecutive_failures: m.consecutiveFailures,
      blacklisted_until: m.blacklistedUntil,
      registered_at: m.registeredAt,
    });
  }

  /** Returns false when the worker is not registered. */
  async heartbeat(workerId: string, at: number): Promise<boolean> {
    const res = await this.db.manager.update(
      WorkerEntity,
      { worker_id: workerId },
      { last_heartbeat_at: at },
    );
    return (res.affected ?? 0) > 0;
  }

  async recordOutcome(
    workerId: string,
    failures: number,
    blacklistedUntil: number | null,
  ): Promise<void> {
    await this.db.manager.update(
      WorkerEntity,
      { worker_id: workerId },
      { consecutive_failures: failures, blacklisted_until: blacklistedUntil },
    );
  }

  /** Starts (at `since`) or ends (null) a drain; false when the worker is not registered. */
  async setDraining(workerId: string, since: number | null): Promise<boolean> {
    const res = await this.db.manager.update(
      WorkerEntity,
      { worker_id: workerId },
      { draining_since: since },
    );
    return (res.affected ?? 0) > 0;
  }

  /** Sets a blacklist by hand; false when the worker is not registered. */
  async setManualBlacklist(workerId: string, b: ManualBlacklist): Promise<boolean> {
    const res = await this.db.manager.update(
      WorkerEntity,
      { worker_id: workerId },
      {
        manual_blacklist_reason: b.reason,
        manual_blacklist_since: b.since,
        manual_blacklist_until: b.until,
      },
    );
    return (res.affected ?? 0) > 0;
  }

  /** Ends every blacklist, by hand or after failures, and the failure streak with it. */
  async liftBlacklists(workerId: string): Promise<boolean> {
    const res = await this.db.manager.update(
      WorkerEntity,
      { worker_id: workerId },
      {
        manual_blacklist_reason: null,
        manual_blacklist_since: null,
        manual_blacklist_until: null,
        blacklisted_until: null,
        consecutive_failures: 0,
      },
    );
    return (res.affected ?? 0) > 0;
  }

  async remove(workerId: string): Promise<boolean> {
    const res = await this.db.manager.delete(WorkerEntity, { worker_id: workerId });
    return (res.affected ?? 0) > 0;
  }
}
