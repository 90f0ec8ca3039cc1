import { Injectable } from '@nestjs/common';
import { TaskOutcome, TaskStatus } from '@baton/task-contract';
import { EntityManager } from 'typeorm';
import { TransactionRunner } from '../database';
import { SqlRunner } from './sql-runner';
import { TaskModel } from './task.model';

/** One status change of a task, as its consumers learn of it. */
export interface TaskStatusChange {
  /** Position in the outbox: increases with each change of a task (not a global commit order). */
  id: number;
  taskId: string;
  taskType: string;
  tenant: string;
  /** Null for a task's first status (it was created). */
  from: TaskStatus | null;
  to: TaskStatus;
  /** The task's outcome once it has one (SUCCESS, FAIL, ROLLBACK, CANCELLED): set with the move to FINISH. */
  outcome: TaskOutcome | null;
  attempt: number;
  at: number;
}

/** A change as it is written, before the outbox numbers it. */
export interface NewTaskStatusChange extends Omit<TaskStatusChange, 'id'> {
  /** The task after the change (its status is the last of the write: read `to` for this move). */
  task: TaskModel;
  /** Why the task moved, as the lifecycle log says it. */
  reason: string;
  /** Grows with each move of the task (its version, and the move's place in one write). */
  order: number;
  /** The outcome the task had in `from` (a FINISH left for a re-run or a late rollback had one). */
  fromOutcome: TaskOutcome | null;
}

/**
 * A module that must learn of task status changes durably: topologies (a node ended, evaluate its
 * dependants), webhooks (an outbox of notifications), metrics of finished tasks.
 *
 * The promise: every change the consumer `wants` is written to the outbox in the same transaction
 * as the change itself, so a change that committed is never lost, whatever crashes after; and
 * `handle` is called at least once for it, in order per task, until it returns. A change is never
 * handled before it committed. Handlers must be idempotent: a crash after `handle` and before the
 * outbox row is deleted hands the same change over again (its `id` tells).
 */
export interface TaskChangeConsumer {
  /** Stable and unique (at most 64 characters): the consumer's outbox rows are kept under it. */
  readonly name: string;
  /** Whether the consumer wants this change. Called inside the writing transaction: no I/O. */
  wants(change: NewTaskStatusChange): boolean;
  /**
   * The next changes for this consumer, oldest first. Throw to have the same changes again later
   * (with backoff); a change is only dropped from the outbox once this resolves.
   */
  handle(changes: readonly TaskStatusChange[]): Promise<void>;
}

/**
 * A module that writes its own rows in the transaction of each change (webhooks: the messages to
 * deliver), with the task as it is at that move. Nothing is handed over later: what it writes
 * commits or rolls back with the change. `write` may only touch the database through `m`.
 */
export interface TaskChangeWriter {
  readonly name: string;
  /** Writes what the changes need; true when it wrote something (TaskChangeFeed tells, after the commit). */
  write(m: EntityManager, changes: readonly NewTaskStatusChange[]): Promise<boolean>;
}

/**
 * The durable status-change seam: consumers subscribe once at start (`onModuleInit`), the task
 * store writes their outbox rows with every change, and TaskChangeRelay hands the rows over.
 */
@Injectable()
export class TaskChangeFeed {
  private readonly consumers = new Map<string, TaskChangeConsumer>();
  private readonly writers: TaskChangeWriter[] = [];
  private readonly listeners: (() => void)[] = [];
  constructor(
    private readonly sql: SqlRunner,
    private readonly tx: TransactionRunner,
  ) {}

  /**
   * Registers a consumer. Subscribe before the application starts driving tasks
   * (`onModuleInit`): changes are written for the consumers known when they happen.
   */
  subscribe(consumer: TaskChangeConsumer): void {
    if (this.consumers.has(consumer.name))
      throw new Error(`a task change consumer named ${consumer.name} is already subscribed`);
    if (consumer.name.length === 0 || consumer.name.length > 64)
      throw new Error(`a task change consumer's name must have 1 to 64 characters`);
    this.consumers.set(consumer.name, consumer);
  }

  /** Adds a writer of rows in each change's transaction (before the application starts). */
  attach(writer: TaskChangeWriter): void {
    if (this.writers.some((w) => w.name === writer.name))
      throw new Error(`a task change writer named ${writer.name} is already attached`);
    this.writers.push(writer);
  }

  subscribers(): readonly TaskChangeConsumer[] {
    return [...this.consumers.values()];
  }

  /** Called once outbox (or writers') rows have committed: the relay looks soon. */
  onCommitted(listener: () => void): void {
    this.listeners.push(listener);
  }

  /**
   * The outbox rows of these changes, in the caller's transaction. When that transaction commits
   * (TransactionRunner's post-commit hook, the one such mechanism), the listeners are told.
   */
  async write(m: EntityManager, changes: readonly NewTaskStatusChange[]): Promise<void> {
    if (changes.length === 0) return;
    let wrote = false;
    for (const w of this.writers) if (await w.write(m, changes)) wrote = true;
    if (await this.writeOutbox(m, changes)) wrote = true;
    if (wrote) this.tx.afterCommit(m, () => this.listeners.forEach((l) => l()));
  }

  private async writeOutbox(
    m: EntityManager,
    changes: readonly NewTaskStatusChange[],
  ): Promise<boolean> {
    if (this.consumers.size === 0) return false;
    const rows: Record<string, unknown>[] = [];
    for (const c of changes)
      for (const consumer of this.consumers.values())
        if (consumer.wants(c))
          rows.push({
            consumer: consumer.name,
            task_id: c.taskId,
            task_type: c.taskType,
            tenant: c.tenant,
            from_status: c.from,
            to_status: c.to,
            outcome: c.outcome,
            attempt: c.attempt,
            created_at: c.at,
          });
    if (rows.length === 0) return false;
    await this.sql.insertRows(m, 'baton_task_change', rows);
    return true;
  }
}
