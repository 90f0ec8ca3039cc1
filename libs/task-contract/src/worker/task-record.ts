import { TaskStatus } from '../enums/task-status.enum';
import { CreateInfoDto } from '../dto/create-info.dto';
import { ProcessArgDto } from '../dto/process-arg.dto';
import { ProgressDto, TaskErrorDto, TaskViewDto } from '../dto/worker-responses.dto';
import { cloneJson } from '../util/clone-json';
import { TaskSnapshot } from './task-handler.interface';

/** What a worker keeps per task, in its store. Plain JSON so any store can hold it. */
export interface TaskRecord {
  task_id: string;
  task_type: string;
  task_name: string;
  status: TaskStatus;
  attempt: number;
  /** Highest X-Baton-Fence seen. */
  fence: number;
  create_info: CreateInfoDto;
  process_arg: ProcessArgDto;
  params: Record<string, unknown>;
  lock_keys: string[];
  progress: ProgressDto;
  heartbeat_at: string | null;
  result: Record<string, unknown> | null;
  error: TaskErrorDto | null;
  /** Where continue goes back to. */
  paused_from: TaskStatus | null;
  created_at: string;
  updated_at: string;
}

/** The record as the contract shows it. */
export function toTaskView(record: TaskRecord): TaskViewDto {
  return {
    task_id: record.task_id,
    task_type: record.task_type,
    task_name: record.task_name,
    task_status: record.status,
    attempt: record.attempt,
    fence: record.fence,
    create_info: record.create_info,
    process_arg: record.process_arg,
    params: record.params,
    lock_keys: record.lock_keys,
    progress: record.progress,
    heartbeat_at: record.heartbeat_at,
    result: record.result,
    error: record.error,
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}

/** The record as a handler sees it: a frozen copy, so nothing the handler does reaches the store. */
export function toSnapshot(record: TaskRecord): TaskSnapshot {
  return Object.freeze({
    taskId: record.task_id,
    taskType: record.task_type,
    taskName: record.task_name,
    attempt: record.attempt,
    fence: record.fence,
    status: record.status,
    params: cloneJson(record.params),
    lockKeys: [...record.lock_keys],
    result: record.result && cloneJson(record.result),
  });
}
