import { components, operations } from './generated/scheduler.v1';

/*
 * The shapes of the scheduler's API, taken from the types generated out of
 * openapi/scheduler.v1.json (`npm run openapi` writes both; the drift check keeps them equal).
 */
type Schemas = components['schemas'];

export type CreateTask = Schemas['CreateTaskDto'];
export type CreateTaskBatch = Schemas['CreateTaskBatchDto'];
export type Task = Schemas['TaskDto'];
export type TaskPage = Schemas['TaskPageDto'];
export type TaskEvent = Schemas['TaskEventDto'];
export type TaskAttempt = Schemas['TaskAttemptDto'];
export type Worker = Schemas['WorkerDto'];
export type TaskStatus = Schemas['TaskStatus'];
export type TaskListQuery = NonNullable<operations['TasksController_list']['parameters']['query']>;
