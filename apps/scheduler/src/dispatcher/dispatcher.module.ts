import { Module } from '@nestjs/common';
import { RunnerModule } from '../runner';
import { TaskStoreModule } from '../task-store';
import { DispatcherService } from './dispatcher.service';

/** The Dispatcher: moves tasks that fall due from the database into the queue lanes. */
@Module({ imports: [TaskStoreModule, RunnerModule], providers: [DispatcherService] })
export class DispatcherModule {}
