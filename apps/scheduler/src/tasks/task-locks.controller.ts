import { Controller, Get, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ContractErrorCode, Envelope, ok } from '@baton/task-contract';
import { Access, CallerTenant } from '../auth';
import { ApiErrors } from '../common';
import { TaskLockDto } from './dto/task-lock.dto';
import { TaskLocksService } from './task-locks.service';

@ApiTags('tasks')
@Access('read')
@Controller('v1/tasks')
export class TaskLocksController {
  constructor(private readonly taskLocks: TaskLocksService) {}

  @Get(':task_id/locks')
  @ApiOperation({
    summary: "who holds each of the task's lock keys now, asked of the lock backend",
    description:
      'One entry per lock key, in the task’s order (none when it has no lock keys). A task holds ' +
      'its keys from the start of an attempt until a final state; a task waiting for a key (POSTPONE) ' +
      'shows who holds it. The answer is what the backend said at that moment. 503 when the lock ' +
      'backend cannot be reached.',
  })
  @ApiOkResponse({ type: [TaskLockDto] })
  @ApiErrors(ContractErrorCode.NOT_READY)
  async locks(
    @Param('task_id') taskId: string,
    @CallerTenant() tenant: string | null,
  ): Promise<Envelope<TaskLockDto[]>> {
    return ok(await this.taskLocks.locks(taskId, tenant));
  }
}
