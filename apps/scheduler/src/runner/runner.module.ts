import { Module } from '@nestjs/common';
import { EngineModule } from '../engine';
import { RunnerService } from './runner.service';

/** The runner: pulls due tasks from the queue lanes and lets the engine drive each. */
@Module({ imports: [EngineModule], providers: [RunnerService], exports: [RunnerService] })
export class RunnerModule {}
