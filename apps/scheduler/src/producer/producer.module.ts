import { Module } from '@nestjs/common';
import { TasksModule } from '../tasks';
import { ProducerOwnership } from './ownership';
import { ProducerService } from './producer.service';
import { TimersController } from './timers.controller';
import { TimersRepository } from './timers.repository';
import { TimersService } from './timers.service';

/** The Producer: timer definitions and their fires, each fire a task created exactly once. */
@Module({
  imports: [TasksModule],
  controllers: [TimersController],
  providers: [TimersRepository, ProducerOwnership, ProducerService, TimersService],
})
export class ProducerModule {}
