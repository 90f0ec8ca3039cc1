import { Global, Module } from '@nestjs/common';
import { Clock } from './clock';
import { IdGenerator } from './id-generator';
import { Lifecycle } from './lifecycle';
import { Overload } from './overload';

/**
 * Time and ids (every module asks these rather than `Date.now()` or a library, so tests can steer
 * them), the process's lifecycle (draining once SIGTERM came) and its load (back-pressure).
 */
@Global()
@Module({
  providers: [Clock, IdGenerator, Lifecycle, Overload],
  exports: [Clock, IdGenerator, Lifecycle, Overload],
})
export class CommonModule {}
