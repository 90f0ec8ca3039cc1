import { isIn, isString, isURL, matches, maxLength } from 'class-validator';
import {
  FastValidator,
  RepetitionKind,
  URL_OPTIONS,
  fastTaskParts,
  onlyKeys,
  plainJson,
  plainObject,
} from '@baton/task-contract';
import { TENANT_PATTERN } from '../../common';
import { CreateTaskBatchDto, CreateTaskDto } from './create-task.dto';

/**
 * Precompiled checks of the create bodies, for FastValidationPipe: the DTOs' rules through the
 * functions their decorators call, answering the instance the ValidationPipe would make, or
 * `undefined` (then the ValidationPipe decides, and words any refusal). create-task.fast.spec.ts
 * holds them to the decorators.
 */
const KEYS = new Set([
  'create_info',
  'process_arg',
  'repetition',
  'params',
  'lock_keys',
  'idempotency_key',
  'tenant',
  'labels',
  'callback_url',
]);
const REPETITIONS = [RepetitionKind.SIMPLE, RepetitionKind.PERMANENT];
const LOCK_KEY = /^[A-Za-z0-9._:/-]{1,200}$/;
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,200}$/;
const MAX_LOCK_KEYS = 32;

export const fastCreateTask: FastValidator<CreateTaskDto> = (body) => {
  if (!onlyKeys(body, KEYS)) return undefined;
  const { repetition, lock_keys, idempotency_key, tenant, labels, callback_url } = body;
  const parts = fastTaskParts(body);
  if (!parts) return undefined;
  const { info, arg } = parts;
  if (repetition !== undefined && !isIn(repetition, REPETITIONS)) return undefined;
  if (labels !== undefined && !(plainObject(labels) && plainJson(labels))) return undefined;
  if (lock_keys !== undefined) {
    if (!Array.isArray(lock_keys) || lock_keys.length > MAX_LOCK_KEYS) return undefined;
    for (const key of lock_keys) if (!isString(key) || !matches(key, LOCK_KEY)) return undefined;
  }
  if (
    idempotency_key !== undefined &&
    !(isString(idempotency_key) && matches(idempotency_key, IDEMPOTENCY_KEY))
  )
    return undefined;
  if (tenant !== undefined && !matches(tenant as string, TENANT_PATTERN)) return undefined;
  if (
    callback_url !== undefined &&
    !(isURL(callback_url as string, URL_OPTIONS) && maxLength(callback_url, 500))
  )
    return undefined;
  const out = Object.assign(new CreateTaskDto(), body);
  out.create_info = info;
  if (arg) out.process_arg = arg;
  if (lock_keys !== undefined) out.lock_keys = [...(lock_keys as string[])];
  return out;
};

const MAX_BATCH = 500;

export const fastCreateTaskBatch: FastValidator<CreateTaskBatchDto> = (body) => {
  if (!onlyKeys(body, BATCH_KEYS)) return undefined;
  const { tasks } = body;
  if (!Array.isArray(tasks) || tasks.length < 1 || tasks.length > MAX_BATCH) return undefined;
  const out: CreateTaskDto[] = new Array<CreateTaskDto>(tasks.length);
  for (let i = 0; i < tasks.length; i++) {
    const task: unknown = tasks[i];
    const made = plainObject(task) ? fastCreateTask(task) : undefined;
    if (!made) return undefined;
    out[i] = made;
  }
  return Object.assign(new CreateTaskBatchDto(), { tasks: out });
};
const BATCH_KEYS = new Set(['tasks']);

/** By DTO class, for FastValidationPipe. */
export const CREATE_FAST_VALIDATORS = new Map<unknown, FastValidator<object>>([
  [CreateTaskDto, fastCreateTask],
  [CreateTaskBatchDto, fastCreateTaskBatch],
]);
