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
import { LogOffsetsRepository } from './log-offsets.repository';
import { LogProcessorService } from './log-processor.service';
import { FileTailer } from './sources/file-tailer';
import { RedisStreamDriver } from './sources/redis-stream.driver';
import { StreamConsumer } from './sources/stream-consumer';

interface Source {
  pass(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Runs the configured file and stream sources of this instance, each in its own loop. A failed
 * pass (database or Redis down) is logged and retried: the source's position has not moved past
 * anything whose tasks are missing.
 */
@Injectable()
export class LogSourcesService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly running: { source: Source; loop: PeriodicLoop }[] = [];

  constructor(
    private readonly processor: LogProcessorService,
    private readonly offsets: LogOffsetsRepository,
    private readonly clock: Clock,
    @Inject(LOCK_PROVIDER) private readonly locks: LockProvider,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  onApplicationBootstrap(): void {
    const ld = this.config.logdumper;
    for (const f of ld.files) {
      const tailer = new FileTailer(
        {
          name: f.name,
          path: f.path,
          owner: this.config.instanceId,
          batch: ld.batch,
          leaseMs: ld.fileLeaseMs,
        },
        this.locks,
        this.offsets,
        this.processor,
        () => this.clock.now(),
      );
      this.run(tailer.sourceId, tailer, ld.pollIntervalMs);
    }
    for (const s of ld.streams) {
      const driver = new RedisStreamDriver(
        ld.redis,
        s.key,
        ld.streamGroup,
        this.config.instanceId,
        ld.streamBlockMs,
      );
      const consumer = new StreamConsumer(
        {
          name: s.name,
          batch: ld.batch,
          claimIdleMs: ld.streamClaimIdleMs,
          blockMs: ld.streamBlockMs,
        },
        driver,
        this.processor,
        () => this.clock.now(),
      );
      // The blocking read is the wait between passes; the loop only adds a short pause.
      this.run(consumer.sourceId, consumer, 10);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.running.map((r) => r.loop.stop()));
    await Promise.all(this.running.map((r) => r.source.close()));
  }

  private run(id: string, source: Source, intervalMs: number): void {
    const loop = new PeriodicLoop(this.clock, new Logger(`LogDumper ${id}`), intervalMs, () =>
      source.pass(),
    );
    this.running.push({ source, loop });
    loop.start();
  }
}
