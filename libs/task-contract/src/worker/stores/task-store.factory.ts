import { ContractErrorCode, ContractException } from '../../errors/contract.exception';
import { MemoryTaskStore } from './memory.task-store';
import { SqliteTaskStore } from './sqlite.task-store';
import { TaskStore, TaskStoreConfig } from './task-store.interface';

/** Builds the configured store; an unknown kind fails at boot, not at the first task. */
export function createTaskStore(config: TaskStoreConfig | TaskStore | undefined): TaskStore {
  if (config === undefined) return new MemoryTaskStore();
  if ('save' in config) return config;
  switch (config.kind) {
    case 'memory':
      return new MemoryTaskStore(config);
    case 'sqlite':
      return new SqliteTaskStore(config.path, config);
    default:
      throw new ContractException(
        ContractErrorCode.INTERNAL,
        `unknown task store kind ${JSON.stringify((config as { kind: unknown }).kind)}; use memory or sqlite`,
      );
  }
}
