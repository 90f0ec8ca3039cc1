import { BlockingKind } from '../enums/task-kind.enum';
import { ContractCall } from '../enums/task-action.enum';
import { ContractErrorCode, ContractException } from '../errors/contract.exception';
import { TaskHandler } from './task-handler.interface';

/** A task type as this worker declares it to the scheduler. */
export interface TaskTypeDeclaration {
  task_type: string;
  blocking: BlockingKind;
  implements: ContractCall[];
  /** The retry policy the scheduler starts a type it does not know yet with. */
  defaults?: { max_retry?: number; backoff_base_ms?: number; backoff_max_ms?: number };
  /** JSON Schemas of the params and the result (contract 1.4.0). */
  params_schema?: Record<string, unknown>;
  result_schema?: Record<string, unknown>;
}

/** The task types this worker serves: one handler per type, and what each one offers. */
export class TaskHandlerRegistry {
  private readonly handlers: ReadonlyMap<string, TaskHandler>;

  constructor(handlers: readonly TaskHandler[]) {
    const map = new Map<string, TaskHandler>();
    for (const handler of handlers) {
      if (map.has(handler.type)) {
        throw new ContractException(
          ContractErrorCode.INTERNAL,
          `two handlers for task type ${handler.type}`,
        );
      }
      map.set(handler.type, handler);
    }
    this.handlers = map;
  }

  /**
   * `implements` names the optional calls worth making: those the module answers usefully for
   * every type (change, notify, progress, summary), plus prepare/clean/rollback when the handler
   * has them and pause/continue when a running task can be paused. The scheduler skips the others.
   */
  describe(): TaskTypeDeclaration[] {
    return [...this.handlers.values()].map((h) => {
      const calls: ContractCall[] = [
        ContractCall.CHANGE,
        ContractCall.NOTIFY,
        ContractCall.PROGRESS,
        ContractCall.SUMMARY,
      ];
      if (h.prepare) calls.push(ContractCall.PREPARE);
      if (h.clean) calls.push(ContractCall.CLEAN);
      if (h.rollback) calls.push(ContractCall.ROLLBACK);
      if (h.pausable) calls.push(ContractCall.PAUSE, ContractCall.CONTINUE);
      if (h.blocking === BlockingKind.SYNC && !h.prepare) calls.push(ContractCall.CREATE_RUN);
      const d = h.defaults;
      return {
        task_type: h.type,
        blocking: h.blocking,
        implements: calls,
        ...(d
          ? {
              defaults: {
                ...(d.maxRetry !== undefined ? { max_retry: d.maxRetry } : {}),
                ...(d.backoffBaseMs !== undefined ? { backoff_base_ms: d.backoffBaseMs } : {}),
                ...(d.backoffMaxMs !== undefined ? { backoff_max_ms: d.backoffMaxMs } : {}),
              },
            }
          : {}),
        ...(h.paramsSchema ? { params_schema: { ...h.paramsSchema } } : {}),
        ...(h.resultSchema ? { result_schema: { ...h.resultSchema } } : {}),
      };
    });
  }

  /** The handler of a type; TASK_TYPE_NOT_FOUND for a type this worker does not serve. */
  get(taskType: string): TaskHandler {
    const handler = this.handlers.get(taskType);
    if (!handler) {
      throw new ContractException(
        ContractErrorCode.TASK_TYPE_NOT_FOUND,
        `no handler for task type ${taskType}`,
        {
          task_type: taskType,
          known: [...this.handlers.keys()],
        },
      );
    }
    return handler;
  }
}
