import { compileFastValidator, FastValidator } from './compile-fast-validator';
import { ActionRequestDto, CreateTaskRequestDto } from './worker-requests.dto';

export {
  compileFastValidator,
  NotCompilable,
  plainJson,
  plainObject,
} from './compile-fast-validator';
export type { FastValidator } from './compile-fast-validator';

/** The body of create and create_run, checked by its DTO's own decorators. */
export const fastCreateTaskRequest = compileFastValidator(CreateTaskRequestDto);

/** The optional body of running, pause, continue, prepare, rollback and clean. */
export const fastActionRequest = compileFastValidator(ActionRequestDto);

/**
 * By DTO class: what `validateDto` tries before class-validator, for the contract's hot calls.
 * Each is made from the DTO's decorators (compile-fast-validator.ts): nothing is copied, so a field
 * added to the DTO is checked the same way on both paths.
 */
export const FAST_VALIDATORS = new Map<unknown, FastValidator<object>>([
  [CreateTaskRequestDto, fastCreateTaskRequest],
  [ActionRequestDto, fastActionRequest],
]);
