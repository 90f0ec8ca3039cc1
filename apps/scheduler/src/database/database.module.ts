import { Global, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DataSource } from 'typeorm';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config/scheduler.config';
import { createDataSource } from './data-source.factory';
import { TransactionRunner } from './transaction-runner';

/**
 * Opens the database and, when configured (the embedded default), runs the migrations before
 * anything else touches it. The schema never comes from `synchronize`.
 */
@Global()
@Module({
  providers: [
    {
      provide: DataSource,
      inject: [SCHEDULER_CONFIG],
      useFactory: async (config: SchedulerConfig): Promise<DataSource> => {
        if (config.database.type === 'sqlite')
          mkdirSync(dirname(config.database.path), { recursive: true });
        const ds = createDataSource(config.database);
        await ds.initialize();
        if (config.database.migrate) {
          const ran = await ds.runMigrations({ transaction: 'each' });
          if (ran.length)
            new Logger('Database').log(`migrated: ${ran.map((m) => m.name).join(', ')}`);
        }
        return ds;
      },
    },
    TransactionRunner,
  ],
  exports: [DataSource, TransactionRunner],
})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(@Inject(DataSource) private readonly ds: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.ds.isInitialized) await this.ds.destroy();
  }
}
