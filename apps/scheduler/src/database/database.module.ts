import { DynamicModule, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DataSource } from 'typeorm';
import { Clock } from '../common';
import { DatabaseConfig } from '../config';
import { EntityClass, createDataSource } from './data-source.factory';
import { runMigrationsLocked } from './migrate-locked';
import { openDataSource } from './open-data-source';
import { TransactionRunner } from './transaction-runner';

/**
 * Opens the database and, when configured (the embedded default), runs the migrations before
 * anything else touches it. The schema never comes from `synchronize`. Global: every module's
 * repositories use the one DataSource and TransactionRunner.
 */
@Module({})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(@Inject(DataSource) private readonly ds: DataSource) {}

  /** `entities`: every module's entity classes, gathered by the composition root. */
  static forRoot(
    config: DatabaseConfig & { migrate: boolean },
    entities: readonly EntityClass[],
  ): DynamicModule {
    return {
      module: DatabaseModule,
      global: true,
      providers: [
        {
          provide: DataSource,
          useFactory: async (clock: Clock): Promise<DataSource> => {
            if (config.type === 'sqlite') mkdirSync(dirname(config.path), { recursive: true });
            const ds = await openDataSource(
              () => createDataSource(config, entities),
              config.type === 'mysql' ? (config.startWaitMs ?? 60_000) : 0,
              clock,
            );
            if (config.migrate) {
              const ran = await runMigrationsLocked(ds);
              if (ran.length) new Logger('Database').log(`migrated: ${ran.join(', ')}`);
            }
            return ds;
          },
          inject: [Clock],
        },
        TransactionRunner,
      ],
      exports: [DataSource, TransactionRunner],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.ds.isInitialized) await this.ds.destroy();
  }
}
