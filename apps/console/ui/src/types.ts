// The API's own shapes, generated from openapi/scheduler.v1.json (type-only: nothing is bundled).
import type { components } from '../../../../libs/scheduler-client/src/generated/scheduler.v1';

type Schemas = components['schemas'];
export type Task = Schemas['TaskDto'];
export type TaskPage = Schemas['TaskPageDto'];
export type TaskEvent = Schemas['TaskEventDto'];
export type AttemptLogPage = Schemas['AttemptLogPageDto'];
export type TaskAttempt = Schemas['TaskAttemptDto'];
export type TaskType = Schemas['TaskTypeDto'];
export type TaskCount = Schemas['TaskCountDto'];
export type Worker = Schemas['WorkerDto'];
export type Timer = Schemas['TimerDto'];
export type LogRule = Schemas['LogRuleDto'];
export type Delivery = Schemas['WebhookDeliveryDto'];
export type TaskLock = Schemas['TaskLockDto'];
export type TaskStatus = Schemas['TaskStatus'];
export type CreateTask = Schemas['CreateTaskDto'];

export const STATUSES: readonly TaskStatus[] = [
  'INIT',
  'CREATE',
  'PREPARE',
  'POSTPONE',
  'RUNNING',
  'PAUSE',
  'SUCCESS',
  'FAIL',
  'ROLLBACK',
  'FINISH',
  'NONE',
];

/** Statuses a task rests in until a person moves it on. */
export const isSettled = (t: Pick<Task, 'task_status'>): boolean => t.task_status === 'FINISH';

/** What the worker last said of its progress: a percent, and a step and message if it gave them. */
export function progressOf(
  t: Task,
): { percent: number; step: string | null; message: string | null } | null {
  const p = t.progress;
  if (!p || typeof p.percent !== 'number') return null;
  return {
    percent: p.percent,
    step: typeof p.step === 'string' ? p.step : null,
    message: typeof p.message === 'string' ? p.message : null,
  };
}
