import { DynamicModule, Module } from '@nestjs/common';
import { SCHEDULER_CONFIG, SchedulerConfig } from './scheduler.config';

/** The typed config, validated once at boot, for every module to inject as `SCHEDULER_CONFIG`. */
@Module({})
export class ConfigModule {
  static forRoot(config: SchedulerConfig): DynamicModule {
    return {
      module: ConfigModule,
      global: true,
      providers: [{ provide: SCHEDULER_CONFIG, useValue: config }],
      exports: [SCHEDULER_CONFIG],
    };
  }
}
