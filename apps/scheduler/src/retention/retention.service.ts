import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { LOCK_PROVIDER, LockProvider } from '@baton/locks';
import { Clock, PeriodicLoop } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { Metrics } from '../metrics';
import {
  HISTORY_MINUTES,
  MINUTE_MS,
  TaskHistoryRepository,
  TaskPurgeRepository,
} from '../task-store';
import { TaskTypesService } from '../task-types';
import { RetentionExport } from './retention-export';

const DAY_MS = 86_400_000;
/** One pass purges at most this long, then yields to the next interval. */
const PASS_BUDGET_MS = 30_000;

/** What one pass did. */
export interface RetentionPass {
  purged: number;
  batches: number;
  idempotencyRecords: number;
  /** Rows of the per-minute history of finished tasks that were past HISTORY_MINUTES. */
  historyRows: number;
}

/**
 * Retention: finished tasks are kept for their type's `retention_days` (else
 * `BATON_RETENTION_DAYS`, default 30; 0 keeps them), then purged with their events, attempts,
 * labels and idempotency records, in small batches with a pause between them so a purge never
 * holds a lock or the pool for long. One instance of the fleet purges at a time (a lease in the
 * lock backend); with `BATON_RETENTION_EXPORT_DIR` what goes is written there first.
 */
@Injectable()
export class RetentionService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Retention');
  private readonly loop: PeriodicLoop;
  private readonly exporter: RetentionExport | undefined;
  private stopping = false;

  constructor(
    private readonly purge: TaskPurgeRepository,
    private readonly history: TaskHistoryRepository,
    private readonly types: TaskTypesService,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    @Inject(LOCK_PROVIDER) private readonly locks: LockProvider,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {
    const { intervalMs, exportDir } = config.retention;
    this.exporter = exportDir ? new RetentionExport(exportDir) : undefined;
    this.loop = new PeriodicLoop(this.clock, this.logger, intervalMs, () => this.passIfFirst());
  }

  onApplicationBootstrap(): void {
    this.loop.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.loop.stop();
  }

  /** A pass, when no other instance is purging now. */
  private async passIfFirst(): Promise<RetentionPass | undefined> {
    const lease = await this.locks
      .acquire(['retention'], { ttlMs: PASS_BUDGET_MS * 2, waitMs: 0 })
      .catch(() => undefined);
    if (!lease) return undefined;
    try {
      return await this.runOnce();
    } finally {
      await lease.release().catch(() => undefined);
    }
  }

  /** One pass over every task type: purges what is past its age, a batch at a time. */
  async runOnce(): Promise<RetentionPass> {
    const { defaultDays, batch, pauseMs } = this.config.retention;
    const started = this.clock.now();
    const pass: RetentionPass = { purged: 0, batches: 0, idempotencyRecords: 0, historyRows: 0 };
    const inBudget = (): boolean => !this.stopping && this.clock.now() - started < PASS_BUDGET_MS;
    for (const type of await this.types.list()) {
      const days = type.retentionDays ?? defaultDays;
      if (days === 0) continue;
      const before = started - days * DAY_MS;
      while (inBudget()) {
        const batchStarted = this.clock.now();
        const ids = await this.purge.finishedBefore(type.taskType, before, batch);
        if (ids.length === 0) break;
        if (this.exporter) await this.exporter.write(await this.purge.snapshot(ids), started);
        const n = await this.purge.purge(ids);
        pass.purged += n;
        pass.batches++;
        this.metrics.inc('baton_retention_purged_total', { task_type: type.taskType }, n);
        if (ids.length < batch) break;
        await this.rest(pauseMs, this.clock.now() - batchStarted);
      }
    }
    // Idempotency-Key records outlive nothing: past the default age they go, task or not.
    if (defaultDays > 0)
      while (inBudget()) {
        const n = await this.purge.purgeIdempotencyBefore(started - defaultDays * DAY_MS, batch);
        pass.idempotencyRecords += n;
        if (n < batch) break;
        await this.rest(pauseMs, 0);
      }
    // The history of finished tasks per minute keeps its last hours, whatever the task types keep.
    pass.historyRows = await this.history.prune(started - HISTORY_MINUTES * MINUTE_MS);
    if (pass.purged > 0 || pass.idempotencyRecords > 0)
      this.logger.log(
        `purged ${pass.purged} finished task(s) in ${pass.batches} batch(es) and ${pass.idempotencyRecords} idempotency record(s)`,
      );
    return pass;
  }

  /**
   * The pause after a batch: `pauseMs`, and at least twice what the batch took, so the purge
   * holds the database a third of the time at most, however slow it is under load.
   */
  private async rest(pauseMs: number, tookMs: number): Promise<void> {
    const ms = pauseMs > 0 ? Math.max(pauseMs, 2 * tookMs) : 0;
    if (ms > 0) await this.clock.sleep(ms);
  }
}
