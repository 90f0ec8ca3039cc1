import { TaskChange } from '../../task-store';

/** A change for TaskSteps.step (the actor is the executor's). */
export type Change = Omit<TaskChange, 'actor'>;
/** The jitter source of the backoffs (Math.random unless a test fixes it). */
export type Random = () => number;
