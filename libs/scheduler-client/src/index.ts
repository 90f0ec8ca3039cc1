export type { SchedulerClientClock } from './clock';
export * from './errors';
export * from './scheduler-client';
export * from './types';
export type { components, operations, paths } from './generated/scheduler.v1';
