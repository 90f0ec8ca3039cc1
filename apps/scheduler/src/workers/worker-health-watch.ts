import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Clock, PeriodicLoop } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TransactionRunner } from '../database';
import { toWorkerDto, WorkerDto } from './dto/worker.dto';
import { fleetExclusion, healthOf } from './worker-eligibility';
import { WorkerModel } from './worker.model';

/** Blacklisted at `?` (twice): after call failures, or by hand while that holds. */
const BLACKLISTED = `(blacklisted_until > ? OR (manual_blacklist_reason IS NOT NULL
  AND (manual_blacklist_until IS NULL OR manual_blacklist_until > ?)))`;
/** Not blacklisted at `?` (twice): the negation of BLACKLISTED, NULLs spelt out. */
const NOT_BLACKLISTED = `((blacklisted_until IS NULL OR blacklisted_until <= ?) AND
  (manual_blacklist_reason IS NULL OR manual_blacklist_until <= ?))`;

const numberOrNull = (v: unknown): number | null => (v === null ? null : Number(v));

/** A worker's row as a plain query answers it, as the model. */
function toModel(r: Record<string, unknown>): WorkerModel {
  return {
    workerId: String(r.worker_id),
    url: String(r.url),
    taskTypes: JSON.parse(String(r.task_types)) as string[],
    version: String(r.version),
    contractVersion: String(r.contract_version ?? '1.0.0'),
    capacity: Number(r.capacity),
    lastHeartbeatAt: Number(r.last_heartbeat_at),
    consecutiveFailures: Number(r.consecutive_failures),
    blacklistedUntil: numberOrNull(r.blacklisted_until),
    registeredAt: Number(r.registered_at),
    drainingSince: numberOrNull(r.draining_since),
    manualBlacklist:
      r.manual_blacklist_reason === null
        ? null
        : {
            reason: String(r.manual_blacklist_reason),
            since: Number(r.manual_blacklist_since),
            until: numberOrNull(r.manual_blacklist_until),
          },
  };
}

/**
 * A worker that turned unhealthy: stale (no heartbeat) or blacklisted (its calls kept failing,
 * or a person blacklisted it).
 */
export interface WorkerUnhealthy {
  worker: WorkerDto;
  /** When it was found unhealthy: with the worker id, the event's identity. */
  since: number;
}

/** Told, inside the transaction that records it, of each worker that turned unhealthy. */
export type WorkerHealthListener = (
  m: EntityManager,
  events: readonly WorkerUnhealthy[],
) => Promise<void>;

/**
 * Notices workers turning unhealthy, once each: a row's `unhealthy_since` is set by a
 * compare-and-set, so of several instances looking at once only one records it, and its
 * listeners (webhooks' `worker.unhealthy`) write what they need in the same transaction. A worker
 * healthy again (a heartbeat, the blacklist over) is cleared, and can turn unhealthy anew.
 */
@Injectable()
export class WorkerHealthWatch implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly listeners: WorkerHealthListener[] = [];
  private readonly loop: PeriodicLoop;

  constructor(
    private readonly tx: TransactionRunner,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {
    this.loop = new PeriodicLoop(
      this.clock,
      new Logger('WorkerHealth'),
      config.checker.intervalMs,
      () => this.passOnce(),
    );
  }

  /** Subscribe before the application starts (`onModuleInit`). */
  listen(listener: WorkerHealthListener): void {
    this.listeners.push(listener);
  }

  onApplicationBootstrap(): void {
    this.loop.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.loop.stop();
  }

  /** One look (tests call it): the workers that turned unhealthy since the last. */
  async passOnce(): Promise<WorkerUnhealthy[]> {
    const now = this.clock.now();
    const staleBefore = now - this.config.workers.staleAfterMs;
    // Most passes find nothing: a read first, the transaction only when something turned.
    const [turned] = (await this.tx.single((m) =>
      m.query(
        `SELECT COUNT(*) AS n FROM baton_worker
          WHERE (unhealthy_since IS NULL AND (last_heartbeat_at < ? OR ${BLACKLISTED}))
             OR (unhealthy_since IS NOT NULL AND last_heartbeat_at >= ? AND ${NOT_BLACKLISTED})`,
        [staleBefore, now, now, staleBefore, now, now],
      ),
    )) as { n: unknown }[];
    if (Number(turned?.n ?? 0) === 0) return [];
    return this.tx.run(async (m) => {
      await m.query(
        `UPDATE baton_worker SET unhealthy_since = NULL WHERE unhealthy_since IS NOT NULL
            AND last_heartbeat_at >= ? AND ${NOT_BLACKLISTED}`,
        [staleBefore, now, now],
      );
      const rows = (await m.query(
        `SELECT worker_id, url, task_types, version, capacity, last_heartbeat_at,
                consecutive_failures, blacklisted_until, registered_at, draining_since,
                manual_blacklist_reason, manual_blacklist_since, manual_blacklist_until
           FROM baton_worker WHERE unhealthy_since IS NULL
            AND (last_heartbeat_at < ? OR ${BLACKLISTED})`,
        [staleBefore, now, now],
      )) as Record<string, unknown>[];
      const events: WorkerUnhealthy[] = [];
      for (const r of rows) {
        const runner = m.queryRunner!;
        const won = await runner.query(
          'UPDATE baton_worker SET unhealthy_since = ? WHERE worker_id = ? AND unhealthy_since IS NULL',
          [now, r.worker_id],
          true,
        );
        if ((won.affected ?? 0) === 0) continue;
        const worker = toModel(r);
        // Found by the query above, it is not healthy (the heartbeat seen with `staleBefore`).
        const health = healthOf(worker, now, this.config.workers.staleAfterMs);
        const why = fleetExclusion(worker, health, now);
        const excluded = Object.fromEntries(worker.taskTypes.map((t) => [t, why]));
        events.push({ worker: toWorkerDto(worker, 0, health, excluded, now), since: now });
      }
      if (events.length > 0) for (const l of this.listeners) await l(m, events);
      return events;
    });
  }
}
