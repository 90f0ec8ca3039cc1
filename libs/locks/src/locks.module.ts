import { DynamicModule, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { Clock, systemClock } from '@baton/time';
import { LockConfig } from './lock-config.interface';
import { createLockProvider } from './lock-provider.factory';
import { LOCK_PROVIDER, LockProvider } from './lock-provider.interface';

/**
 * Provides the configured LockProvider under `LOCK_PROVIDER` and closes it on shutdown. Its clock
 * is the one given to `forRoot`, else the app's `Clock` provider when there is one (so a test
 * that provides a `ManualClock` moves the locks too), else the real clock.
 */
@Module({})
export class LocksModule implements OnApplicationShutdown {
  constructor(@Inject(LOCK_PROVIDER) private readonly locks: LockProvider) {}

  /** `config` is the typed, already validated lock section of the app's config. */
  static forRoot(config: LockConfig, clock?: Clock): DynamicModule {
    return {
      module: LocksModule,
      global: true,
      providers: [
        {
          provide: LOCK_PROVIDER,
          inject: [{ token: Clock, optional: true }],
          useFactory: (provided?: Clock) =>
            createLockProvider(config, clock ?? provided ?? systemClock),
        },
      ],
      exports: [LOCK_PROVIDER],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.locks.close();
  }
}
