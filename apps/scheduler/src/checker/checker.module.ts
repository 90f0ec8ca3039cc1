import { Module } from '@nestjs/common';
import { EngineModule } from '../engine';
import { TaskStoreModule } from '../task-store';
import { CheckerService } from './checker.service';

/** The Checker: returns lost queue entries and frees leases of tasks that ended elsewhere. */
@Module({ imports: [TaskStoreModule, EngineModule], providers: [CheckerService] })
export class CheckerModule {}
