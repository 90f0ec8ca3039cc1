import { FastValidator, compileFastValidator } from '@baton/task-contract';
import { CreateTaskBatchDto, CreateTaskDto } from './create-task.dto';

/**
 * The fast checks of the create bodies, for FastValidationPipe, made from the DTOs' own decorators
 * (compileFastValidator): an instance the ValidationPipe would make, or `undefined` (then the
 * ValidationPipe decides, and words any refusal).
 */
export const fastCreateTask = compileFastValidator(CreateTaskDto);
export const fastCreateTaskBatch = compileFastValidator(CreateTaskBatchDto);

export const CREATE_FAST_VALIDATORS = new Map<unknown, FastValidator<object>>([
  [CreateTaskDto, fastCreateTask],
  [CreateTaskBatchDto, fastCreateTaskBatch],
]);
