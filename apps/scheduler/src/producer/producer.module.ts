import { Module, OnModuleInit } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { AuthModule, TenantScopes } from '../auth';
import { TasksModule } from '../tasks';
import { TopologiesModule } from '../topologies';
import { ProducerOwnership } from './ownership';
import { ProducerService } from './producer.service';
import { TimerFiring } from './timer-firing';
import { TimersController } from './timers.controller';
import { TimersRepository } from './timers.repository';
import { TimersService } from './timers.service';

/**
 * The Producer: timer definitions and their fires, each fire a task created (or a topology run
 * started) exactly once.
 */
@Module({
  imports: [AuthModule, TasksModule, TopologiesModule],
  controllers: [TimersController],
  providers: [TimersRepository, ProducerOwnership, TimerFiring, ProducerService, TimersService],
})
export class ProducerModule implements OnModuleInit {
  constructor(
    private readonly scopes: TenantScopes,
    private readonly timers: TimersRepository,
  ) {}

  /** A timer belongs to the tenant of the tasks it makes (TenantScopes). */
  onModuleInit(): void {
    this.scopes.owns(
      'timer_id',
      async (id) => (await this.timers.find(id))?.tenant,
      (id) =>
        new ContractException(ContractErrorCode.NOT_FOUND, `timer ${id} does not exist`, {
          timer_id: id,
        }),
    );
  }
}
