import { DynamicModule, Global, Module } from '@nestjs/common';
import { Clock } from './clock';
import { IdGenerator } from './id-generator';
import { Lifecycle } from './lifecycle';
import { Overload } from './overload';

/**
 * Time and ids (every module asks these rather than `Date.now()` or a library, so tests can steer
 * them), the process's lifecycle (draining once SIGTERM came) and its load (back-pressure).
 */
@Global()
@Module({})
export class CommonModule {
  /** `clock`: the one time source of the app (a ManualClock in tests); the real one by default. */
  static forRoot(clock: Clock = new Clock()): DynamicModule {
    return {
      module: CommonModule,
      providers: [{ provide: Clock, useValue: clock }, IdGenerator, Lifecycle, Overload],
      exports: [Clock, IdGenerator, Lifecycle, Overload],
    };
  }
}
