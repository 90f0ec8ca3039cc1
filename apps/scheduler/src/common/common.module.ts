import { Global, Module } from '@nestjs/common';
import { Clock } from './clock';
import { IdGenerator } from './id-generator';

/** Time and ids: every module asks these rather than `Date.now()` or a library, so tests can steer them. */
@Global()
@Module({ providers: [Clock, IdGenerator], exports: [Clock, IdGenerator] })
export class CommonModule {}
