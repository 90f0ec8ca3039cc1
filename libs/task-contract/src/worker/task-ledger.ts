import { Clock } from '@baton/time';
import { TaskStatus } from '../enums/task-status.enum';
import { ContractErrorCode, ContractException } from '../errors/contract.exception';
import { assertTransition } from '../state-machine/transition-table';
import { TaskViewDto } from '../dto/worker-responses.dto';
import { KeyedMutex } from '../util/keyed-mutex';
import { TaskRecord, toTaskView } from './task-record';
import { TaskStore } from './stores/task-store.interface';

/**
 * The worker's task records: store access, the fence rule, status moves checked against the
 * transition table, and timestamps from the worker's clock.
 *
 * Concurrency: changing sections for one task run one at a time (`exclusive`); reads take no lock.
 */
export class TaskLedger {
  private readonly mutex = new KeyedMutex();
  private readonly fenceListeners: ((taskId: string, fence: number) => void)[] = [];

  constructor(
    private readonly store: TaskStore,
    private readonly clock: Clock,
  ) {}

  now(): number {
    return this.clock.now();
  }

  isoNow(): string {
    return this.clock.date().toISOString();
  }

  /** Runs `section` as the only changing section of this task until it settles. */
  exclusive<T>(taskId: string, section: () => Promise<T>): Promise<T> {
    return this.mutex.run(taskId, section);
  }

  /**
   * The usual changing call: under the task's lock, the task (404 when unknown), its fence
   * accepted, `change` applied, the record stamped and stored; answers the task after it.
   */
  change(
    taskType: string,
    taskId: string,
    fence: number,
    change: (record: TaskRecord) => Promise<void>,
  ): Promise<TaskViewDto> {
    return this.exclusive(taskId, async () => {
      const record = await this.require(taskType, taskId);
      await this.acceptFence(record, fence);
      await change(record);
      await this.commit(record);
      return toTaskView(record);
    });
  }

  /** The record with this id, whatever its type. */
  get(taskId: string): Promise<TaskRecord | undefined> {
    return this.store.get(taskId);
  }

  findByName(taskName: string, limit: number): Promise<TaskRecord[]> {
    return this.store.findByName(taskName, limit);
  }

  /** The record when it exists with this type. */
  async find(taskType: string, taskId: string): Promise<TaskRecord | undefined> {
    const record = await this.store.get(taskId);
    return record && record.task_type === taskType ? record : undefined;
  }

  /** Like find, but an unknown task is TASK_NOT_FOUND. */
  async require(taskType: string, taskId: string): Promise<TaskRecord> {
    const record = await this.find(taskType, taskId);
    if (!record) {
      throw new ContractException(
        ContractErrorCode.TASK_NOT_FOUND,
        `task ${taskId} of type ${taskType} is unknown`,
        {
          task_id: taskId,
        },
      );
    }
    return record;
  }

  /**
   * Every changing call passes here first, under the task's lock: a lower fence than already
   * seen is refused (nothing changes), and a higher one is stored at once — even when the call is
   * then refused or answered idempotently — so the holder it replaced is refused from now on.
   */
  async acceptFence(record: TaskRecord, fence: number): Promise<void> {
    if (fence < record.fence) {
      // Another lock holder has taken over: refuse, change nothing.
      throw new ContractException(
        ContractErrorCode.STALE_FENCE,
        `fence ${fence} is lower than ${record.fence} already seen for task ${record.task_id}`,
        { seen: record.fence, given: fence },
      );
    }
    if (fence > record.fence) {
      record.fence = fence;
      await this.store.save(record);
      for (const listener of this.fenceListeners) listener(record.task_id, fence);
    }
  }

  /** Told each time a higher fence is accepted for a task (its run's callbacks carry it). */
  onFenceRaised(listener: (taskId: string, fence: number) => void): void {
    this.fenceListeners.push(listener);
  }

  /** Moves the record to `to` when the transition table allows it (ILLEGAL_TRANSITION if not). */
  move(record: TaskRecord, to: TaskStatus): void {
    assertTransition(record.status, to);
    record.status = to;
    record.updated_at = this.isoNow();
  }

  /** Stores the record as it is: the caller has stamped what it changed. */
  write(record: TaskRecord): Promise<void> {
    return this.store.save(record);
  }

  /** Stamps updated_at and stores the record: the end of a changing call. */
  async commit(record: TaskRecord): Promise<void> {
    record.updated_at = this.isoNow();
    await this.store.save(record);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
