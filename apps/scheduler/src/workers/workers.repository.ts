import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { WorkerEntity } from './worker.entity';
import { WorkerModel } from './worker.model';

const toModel = (e: WorkerEntity): WorkerModel => ({
  workerId: e.worker_id,
  url: e.url,
  taskTypes: e.task_types,
  version: e.version,
  capacity: e.capacity,
  lastHeartbeatAt: e.last_heartbeat_at,
  consecutiveFailures: e.consecutive_failures,
  blacklistedUntil: e.blacklisted_until,
  registeredAt: e.registered_at,
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

  async save(m: WorkerModel): Promise<void> {
    await this.db.manager.save(WorkerEntity, {
      worker_id: m.workerId,
      url: m.url,
      task_types: m.taskTypes,
      version: m.version,
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

  async remove(workerId: string): Promise<boolean> {
    const res = await this.db.manager.delete(WorkerEntity, { worker_id: workerId });
    return (res.affected ?? 0) > 0;
  }
}
