/*
 * The task engine's rules as pure functions of (task, type policy, what happened, now): each
 * returns what to do, and the engine's parts (TaskEngine, AttemptStarter, TaskPoller,
 * FailurePolicy, TaskCleanup) carry it out: the calls to workers, the writes, the lock keys.
 * Nothing here reads a clock, a database or a worker, so every rule has a table-driven unit test
 * (decide.spec.ts). One file per moment of a task's life.
 */
export * from './types';
export * from './route';
export * from './start';
export * from './failure';
export * from './poll';
export * from './end';
