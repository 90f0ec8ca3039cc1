import { DynamicModule, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { LockConfig } from './lock-config.interface';
import { createLockProvider } from './lock-provider.factory';
import { LOCK_PROVIDER, LockProvider } from './lock-provider.interface';

/** Provides the configured LockProvider under `LOCK_PROVIDER` and closes it on shutdown. */
@Module({})
export class LocksModule implements OnApplicationShutdown {
  constructor(@Inject(LOCK_PROVIDER) private readonly locks: LockProvider) {}

  /** `config` is the typed, already validated lock section of the app's config. */
  static forRoot(config: LockConfig): DynamicModule {
    return {
      module: LocksModule,
      global: true,
      providers: [{ provide: LOCK_PROVIDER, useFactory: () => createLockProvider(config) }],
      exports: [LOCK_PROVIDER],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.locks.close();
  }
}
