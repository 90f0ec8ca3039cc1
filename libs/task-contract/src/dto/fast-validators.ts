import {
  isDateString,
  isEnum,
  isIn,
  isInt,
  isObject,
  isString,
  isURL,
  matches,
  max,
  maxLength,
  min,
  minLength,
} from 'class-validator';
import { TaskStatus, exactTaskStatus } from '../enums/task-status.enum';
import { TASK_TYPE_PATTERN, CreateInfoDto } from './create-info.dto';
import { INITIAL_STATUSES, ProcessArgDto } from './process-arg.dto';
import { ActionRequestDto, CreateTaskRequestDto, TASK_ID_PATTERN } from './worker-requests.dto';

/**
 * Precompiled checks for the bodies of the contract's hot calls (create, create_run, running).
 *
 * Each one takes parsed JSON and answers the DTO instance `plainToInstance` + `validateSync` would
 * have made of it, or `undefined` when it cannot prove the body valid. `undefined` is not a
 * refusal: the caller then runs the class-validator path, which accepts the body or words the
 * refusal. So these checks only ever need to be right about what they accept; they use the very
 * functions the DTOs' decorators call, with the same options, and `fast-validators.spec.ts` holds
 * them to the decorators' verdicts and instances. The DTO classes stay the documented source of
 * the schemas (OpenAPI is generated from them); a field added there and not here only makes its
 * bodies take the slow path.
 */
export type FastValidator<T> = (body: Record<string, unknown>) => T | undefined;

/** True when every own key of `o` is one of `allowed` (the whitelist, forbidNonWhitelisted). */
export function onlyKeys(o: object, allowed: ReadonlySet<string>): boolean {
  for (const key of Object.keys(o)) if (!allowed.has(key)) return false;
  return true;
}

/** A plain JSON object (not an array, not null). */
export function plainObject(v: unknown): v is Record<string, unknown> {
  return isObject(v) && Object.getPrototypeOf(v) === Object.prototype;
}

/** Keys class-transformer drops or chokes on, or Nest's pipe strips: left to the slow path. */
function riskyKey(key: string): boolean {
  return (
    key === '__proto__' || key === 'constructor' || key === 'prototype' || key in Object.prototype
  );
}

/**
 * Free JSON (params, labels) that class-transformer copies unchanged: no key it would drop or
 * trip over, at any depth (bounded; deeper goes the slow way).
 */
export function plainJson(v: unknown, depth = 0): boolean {
  if (v === null || typeof v !== 'object') return true;
  if (depth > 32) return false;
  if (Array.isArray(v)) {
    for (const item of v) if (!plainJson(item, depth + 1)) return false;
    return true;
  }
  if (Object.getPrototypeOf(v) !== Object.prototype) return false;
  for (const key of Object.keys(v)) {
    if (riskyKey(key) || !plainJson((v as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
}

/** An optional integer in [lo, hi]: absent passes; null (which IsOptional also lets by) does not. */
export function optionalInt(v: unknown, lo: number, hi: number): boolean {
  return v === undefined || (isInt(v) && min(v, lo) && max(v, hi));
}

export function optionalString(v: unknown, longest: number): boolean {
  return v === undefined || (isString(v) && maxLength(v, longest));
}

const CREATE_INFO_KEYS = new Set([
  'task_type',
  'task_name',
  'important_level',
  'http_url',
  'parent_task_id',
  'control_task_id',
]);
export const URL_OPTIONS = {
  require_tld: false,
  protocols: ['http', 'https'],
  require_protocol: true,
};

/** `create_info` (CreateInfoDto), as `@ValidateNested` + `@Type` check and build it. */
export function fastCreateInfo(v: unknown): CreateInfoDto | undefined {
  if (!plainObject(v) || !onlyKeys(v, CREATE_INFO_KEYS)) return undefined;
  const { task_type, task_name, important_level, http_url, parent_task_id, control_task_id } = v;
  if (!isString(task_type) || !matches(task_type, TASK_TYPE_PATTERN)) return undefined;
  if (!isString(task_name) || !minLength(task_name, 1) || !maxLength(task_name, 200))
    return undefined;
  if (!optionalInt(important_level, 0, 9)) return undefined;
  if (
    http_url !== undefined &&
    !(isURL(http_url as string, URL_OPTIONS) && maxLength(http_url, 500))
  )
    return undefined;
  if (!optionalString(parent_task_id, 64) || !optionalString(control_task_id, 64)) return undefined;
  return Object.assign(new CreateInfoDto(), v);
}

const PROCESS_ARG_KEYS = new Set([
  'start_time',
  'deadline_second',
  'lock_timeout',
  'max_retry',
  'task_status',
]);
const INITIAL = INITIAL_STATUSES as readonly TaskStatus[];

/** `process_arg` (ProcessArgDto), its `@Transform` of task_status included. */
export function fastProcessArg(v: unknown): ProcessArgDto | undefined {
  if (!plainObject(v) || !onlyKeys(v, PROCESS_ARG_KEYS)) return undefined;
  const { start_time, deadline_second, lock_timeout, max_retry } = v;
  if (start_time !== undefined && !isDateString(start_time, { strict: true })) return undefined;
  if (!optionalInt(deadline_second, 1, 604800) || !optionalInt(lock_timeout, 1, 86400))
    return undefined;
  if (!optionalInt(max_retry, 0, 100)) return undefined;
  const out = Object.assign(new ProcessArgDto(), v);
  if (v.task_status !== undefined) {
    // The DTO's @Transform, then @IsEnum and @IsIn on what it made.
    const status = exactTaskStatus(v.task_status) ?? v.task_status;
    if (!isEnum(status, TaskStatus) || !isIn(status, INITIAL)) return undefined;
    out.task_status = status as TaskStatus;
  }
  return out;
}

/**
 * The parts every create body shares, the worker's and the scheduler's: `create_info` (required),
 * `process_arg` and `params` (optional), checked and `create_info`/`process_arg` built.
 */
export function fastTaskParts(
  body: Record<string, unknown>,
): { info: CreateInfoDto; arg: ProcessArgDto | undefined } | undefined {
  const info = fastCreateInfo(body.create_info);
  if (!info) return undefined;
  let arg: ProcessArgDto | undefined;
  if (body.process_arg !== undefined) {
    arg = fastProcessArg(body.process_arg);
    if (!arg) return undefined;
  }
  if (body.params !== undefined && !(plainObject(body.params) && plainJson(body.params)))
    return undefined;
  return { info, arg };
}

const CREATE_KEYS = new Set([
  'task_id',
  'attempt',
  'create_info',
  'process_arg',
  'params',
  'lock_keys',
]);

/** The body of create and create_run. */
export const fastCreateTaskRequest: FastValidator<CreateTaskRequestDto> = (body) => {
  if (!onlyKeys(body, CREATE_KEYS)) return undefined;
  const { task_id, attempt, lock_keys } = body;
  if (!isString(task_id) || !matches(task_id, TASK_ID_PATTERN)) return undefined;
  if (!optionalInt(attempt, 1, 10000)) return undefined;
  const parts = fastTaskParts(body);
  if (!parts) return undefined;
  const { info, arg } = parts;
  if (lock_keys !== undefined) {
    if (!Array.isArray(lock_keys)) return undefined;
    for (const key of lock_keys) if (!isString(key) || !maxLength(key, 200)) return undefined;
  }
  const out = Object.assign(new CreateTaskRequestDto(), body);
  out.create_info = info;
  if (arg) out.process_arg = arg;
  if (lock_keys !== undefined) out.lock_keys = [...(lock_keys as string[])];
  return out;
};

const ACTION_KEYS = new Set(['reason']);

/** The optional body of running, pause, continue, prepare, rollback and clean. */
export const fastActionRequest: FastValidator<ActionRequestDto> = (body) => {
  if (!onlyKeys(body, ACTION_KEYS)) return undefined;
  if (!optionalString(body.reason, 500)) return undefined;
  return Object.assign(new ActionRequestDto(), body);
};

/** By DTO class: what `validateDto` tries before class-validator. */
export const FAST_VALIDATORS = new Map<unknown, FastValidator<object>>([
  [CreateTaskRequestDto, fastCreateTaskRequest],
  [ActionRequestDto, fastActionRequest],
]);
