import { systemClock } from '@baton/time';
import { BlockingKind } from '@baton/task-contract';
import { DataSource } from 'typeorm';
import { TASK_TYPE_DEFAULTS, TaskTypeModel } from '../task-type.model';
import { TaskTypesRepository } from '../task-types.repository';

/** The types repository over a data source, and a way to store a type with defaults: for specs. */
export function taskTypesStack(ds: DataSource) {
  const repo = new TaskTypesRepository(ds);
  return {
    repo,
    save: async (taskType: string, over: Partial<TaskTypeModel> = {}): Promise<void> => {
      const now = systemClock.now();
      await repo.save({
        ...TASK_TYPE_DEFAULTS,
        taskType,
        blocking: BlockingKind.SYNC,
        implements: [],
        timeoutPolicy: { ...TASK_TYPE_DEFAULTS.timeoutPolicy },
        createdAt: now,
        updatedAt: now,
        ...over,
      });
    },
  };
}
