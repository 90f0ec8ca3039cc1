import { Module } from '@nestjs/common';
import { TaskStoreModule } from '../task-store';
import { TaskTypesModule } from '../task-types';
import { RetentionService } from './retention.service';

/** Retention: finished tasks purged after their type's age, in small batches. */
@Module({
  imports: [TaskStoreModule, TaskTypesModule],
  providers: [RetentionService],
  exports: [RetentionService],
})
export class RetentionModule {}
