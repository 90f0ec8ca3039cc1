import { TaskStatus } from '../enums/task-status.enum';
import { ContractErrorCode, ContractException } from '../errors/contract.exception';
import {
  HeartbeatDto,
  ProgressViewDto,
  QueryResultDto,
  StatusDto,
  SummaryDto,
} from '../dto/worker-responses.dto';
import { TaskHandler } from './task-handler.interface';
import { TaskLedger } from './task-ledger';
import { TaskRecord, toSnapshot, toTaskView } from './task-record';
import { TaskRunner } from './task-runner';

const DEFAULT_HEARTBEAT_TIMEOUT_MS = 15_000;
const QUERY_LIMIT = 100;

/** The reading calls — query, status, heartbeat, progress, summary. They change nothing and take no lock. */
export class TaskReads {
  constructor(
    private readonly ledger: TaskLedger,
    private readonly runner: TaskRunner,
  ) {}

  async query(
    taskType: string,
    taskId: string | undefined,
    taskName: string | undefined,
  ): Promise<QueryResultDto> {
    if (!taskId && !taskName) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        'query needs task_id or task_name',
      );
    }
    let records: TaskRecord[];
    if (taskId) {
      const found = await this.ledger.get(taskId);
      records = found ? [found] : [];
    } else {
      records = await this.ledger.findByName(taskName as string, QUERY_LIMIT);
    }
    const items = records
      .filter((r) => r.task_type === taskType && (!taskName || r.task_name === taskName))
      .map(toTaskView);
    return { items };
  }

  async status(taskType: string, taskId: string): Promise<StatusDto> {
    const record = await this.ledger.find(taskType, taskId);
    if (!record) return { task_id: taskId, task_status: TaskStatus.NONE, attempt: 0 };
    return { task_id: taskId, task_status: record.status, attempt: record.attempt };
  }

  async heartbeat(handler: TaskHandler, taskId: string): Promise<HeartbeatDto> {
    // Read under the task's lock: the run's start (status, then execution) and its end (outcome,
    // then no execution) are each one section there, so a read between their two steps cannot
    // take a run that is starting or ending for one that was lost.
    return this.ledger.exclusive(taskId, async () => {
      const record = await this.ledger.find(handler.type, taskId);
      if (!record)
        return { task_id: taskId, alive: false, task_status: TaskStatus.NONE, heartbeat_at: null };
      const window = handler.heartbeatTimeoutMs ?? DEFAULT_HEARTBEAT_TIMEOUT_MS;
      const execution = this.runner.execution(taskId);
      const current = execution !== undefined && execution.attempt === record.attempt;
      const beat = record.heartbeat_at ? Date.parse(record.heartbeat_at) : 0;
      // Alive means: an execution of the current attempt exists in this process and beat recently.
      // After a worker restart the record may say RUNNING, but nothing runs: not alive, and lost.
      const alive = current && this.ledger.now() - beat <= window;
      return {
        task_id: taskId,
        alive,
        task_status: record.status,
        heartbeat_at: record.heartbeat_at,
        ...(record.status === TaskStatus.RUNNING && !current ? { execution_lost: true } : {}),
      };
    });
  }

  async progress(handler: TaskHandler, taskId: string): Promise<ProgressViewDto> {
    const record = await this.ledger.require(handler.type, taskId);
    if (handler.progress) {
      const p = await handler.progress(toSnapshot(record));
      return {
        task_id: taskId,
        task_status: record.status,
        percent: p.percent,
        step: p.step ?? null,
        message: p.message ?? null,
        updated_at: this.ledger.isoNow(),
      };
    }
    return { task_id: taskId, task_status: record.status, ...record.progress };
  }

  async summary(handler: TaskHandler, taskId: string): Promise<SummaryDto> {
    const record = await this.ledger.require(handler.type, taskId);
    const summary = handler.summary
      ? await handler.summary(toSnapshot(record))
      : defaultSummary(record);
    return {
      task_id: taskId,
      task_status: record.status,
      summary,
      result: record.result,
      error: record.error,
    };
  }
}

function defaultSummary(record: TaskRecord): string {
  if (record.error) return `${record.status}: ${record.error.message}`;
  if (record.result) {
    const keys = Object.keys(record.result);
    return keys.length ? `${record.status}: ${keys.join(', ')}` : record.status;
  }
  return record.status;
}
