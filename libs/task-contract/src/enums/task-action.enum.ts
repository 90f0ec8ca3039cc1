/**
 * The `action` query parameter of the worker contract (docs/architecture.md). A call without an
 * action is `query` (GET) or `notify` (PUT); create is the POST.
 */
export enum TaskAction {
  STATUS = 'status',
  RUNNING = 'running',
  PAUSE = 'pause',
  CONTINUE = 'continue',
  PREPARE = 'prepare',
  ROLLBACK = 'rollback',
  CHANGE = 'change',
  CLEAN = 'clean',
  HEARTBEAT = 'heartbeat',
  PROGRESS = 'progress',
  SUMMARY = 'summary',
}

/** Actions read with GET (no side effect). */
export const GET_ACTIONS = [
  TaskAction.STATUS,
  TaskAction.HEARTBEAT,
  TaskAction.PROGRESS,
  TaskAction.SUMMARY,
] as const;
export type GetAction = (typeof GET_ACTIONS)[number];

/** Actions sent with PUT (they change the task). */
export const PUT_ACTIONS = [
  TaskAction.RUNNING,
  TaskAction.PAUSE,
  TaskAction.CONTINUE,
  TaskAction.PREPARE,
  TaskAction.ROLLBACK,
  TaskAction.CHANGE,
  TaskAction.CLEAN,
] as const;
export type PutAction = (typeof PUT_ACTIONS)[number];

/** The thirteen calls of the contract, by name, as the client and the conformance kit speak of them. */
export enum ContractCall {
  CREATE = 'create',
  QUERY = 'query',
  STATUS = 'status',
  NOTIFY = 'notify',
  RUN = 'run',
  PAUSE = 'pause',
  CONTINUE = 'continue',
  PREPARE = 'prepare',
  ROLLBACK = 'rollback',
  CHANGE = 'change',
  CLEAN = 'clean',
  HEARTBEAT = 'heartbeat',
  PROGRESS = 'progress',
  SUMMARY = 'summary',
  /**
   * create and run in one call (`POST ...?action=running`), for a sync type with nothing to
   * prepare: the run's outcome comes back in the create's answer. Optional.
   */
  CREATE_RUN = 'create_run',
}

/** Calls a worker may leave out (declared at registration); the rest are required. */
export const OPTIONAL_CALLS: ReadonlySet<ContractCall> = new Set([
  ContractCall.PREPARE,
  ContractCall.PAUSE,
  ContractCall.CONTINUE,
  ContractCall.ROLLBACK,
  ContractCall.CHANGE,
  ContractCall.CLEAN,
  ContractCall.PROGRESS,
  ContractCall.SUMMARY,
  ContractCall.NOTIFY,
  ContractCall.CREATE_RUN,
]);
