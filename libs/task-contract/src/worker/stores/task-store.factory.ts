import { Clock, systemClock } from '@baton/time';
import { ContractErrorCode, ContractException } from '../../errors/contract.exception';
import { MemoryTaskStore } from './memory.task-store';
import { SqliteTaskStore } from './sqlite.task-store';
import { TaskStore, TaskStoreConfig } from './task-store.interface';

/**
 * Builds the configured store, on the worker's clock; an unknown kind fails at boot, not at the
 * first task. A store given ready-made is used as it is.
 */
export function createTaskStore(
  config: TaskStoreConfig | TaskStore | undefined,
  clock: Clock = systemClock,
): TaskStore {
  if (config === undefined) return new MemoryTaskStore({ clock });
  if ('save' in config) return config;
  switch (config.kind) {
    case 'memory':
      return new MemoryTaskStore({ ...config, clock });
    case 'sqlite':
      return new SqliteTaskStore(config.path, { ...config, clock });
    default:
      throw new ContractException(
        ContractErrorCode.INTERNAL,
        `unknown task store kind ${JSON.stringify((config as { kind: unknown }).kind)}; use memory or sqlite`,
      );
  }
}
