import { Module } from '@nestjs/common';
import { TaskTypesController } from './task-types.controller';
import { TaskTypesRepository } from './task-types.repository';
import { TaskTypesService } from './task-types.service';

/** The registered task types: their contract (blocking, calls implemented) and their policies. */
@Module({
  controllers: [TaskTypesController],
  providers: [TaskTypesRepository, TaskTypesService],
  exports: [TaskTypesService],
})
export class TaskTypesModule {}
