import { Injectable } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { Clock } from '../common';
import { TaskChange, TaskModel, TaskPatch, TasksRepository } from '../task-store';
import { notCentre } from './run-control';
import { TasksService } from './tasks.service';

const ACTOR = 'api';

/** The two steps every action of a person takes: find the task free, then change it. */
@Injectable()
export class ActionSteps {
  constructor(
    private readonly repo: TasksRepository,
    private readonly tasks: TasksService,
    private readonly clock: Clock,
  ) {}

  /** The task, when no runner holds its claim right now (else 409: try again in a moment). */
  async free(taskId: string): Promise<TaskModel> {
    const t = notCentre(await this.tasks.get(taskId));
    if (t.owner !== null && (t.leaseUntil ?? 0) > this.clock.now()) {
      throw new ContractException(
        ContractErrorCode.VERSION_CONFLICT,
        `task ${taskId} is being driven by ${t.owner}; try again shortly`,
        { task_id: taskId },
      );
    }
    return t;
  }

  /** An action of the API: every one is logged, a request that moves no status too (a note). */
  async change(
    t: TaskModel,
    change: Omit<TaskChange, 'actor'> & { patch?: TaskPatch },
    actor = ACTOR,
  ): Promise<TaskModel> {
    const next = await this.repo.apply(t, { ...change, actor, note: true }, this.clock.now());
    if (!next) {
      throw new ContractException(
        ContractErrorCode.VERSION_CONFLICT,
        `task ${t.taskId} changed meanwhile; read it again and retry`,
        { task_id: t.taskId },
      );
    }
    return next;
  }
}
