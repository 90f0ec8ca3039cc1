import { Injectable } from '@nestjs/common';
import { ContractErrorCode, ContractException, RepetitionKind } from '@baton/task-contract';
import { Clock } from '../common';
import { EntityManager } from 'typeorm';
import {
  TaskAttemptModel,
  TaskCount,
  TaskCountsRepository,
  TaskEventModel,
  TaskLogRepository,
  TaskModel,
  TaskOrder,
  TasksRepository,
} from '../task-store';
import { CreateTaskDto } from './dto/create-task.dto';
import { ListTasksQuery, searchFilterOf, taskFilterOf } from './dto/list-tasks.query';
import { decodeTaskCursor, encodeTaskCursor } from './dto/task-cursor';
import { FastEnqueue } from './fast-enqueue';
import { TaskFactory } from './task-factory';

const ACTOR = 'api';

/**
 * Tasks in, and what is known of them: create (one, or a batch all or none), look up, list, the
 * lifecycle log and the attempts. What may be done to a task is TaskActionsService's.
 */
@Injectable()
export class TasksService {
  constructor(
    private readonly repo: TasksRepository,
    private readonly log: TaskLogRepository,
    private readonly factory: TaskFactory,
    private readonly fast: FastEnqueue,
    private readonly clock: Clock,
    private readonly counts: TaskCountsRepository,
  ) {}

  /**
   * A task made from a create body, checked as `create` checks it, but not stored: a module that
   * stores tasks with its own rows (topologies) inserts it with `insertWithin` and, once its
   * transaction committed, calls `committed`. The run sets tenant and parentage.
   */
  async build(
    dto: CreateTaskDto,
    set: { tenant: string; parentTaskId: string | null; controlTaskId: string | null },
  ): Promise<TaskModel> {
    const task = await this.factory.build({ ...dto, tenant: set.tenant }, this.clock.now());
    return { ...task, parentTaskId: set.parentTaskId, controlTaskId: set.controlTaskId };
  }

  /** The centre task of a topology run (see TaskFactory.centre), not stored. */
  centre(args: Omit<Parameters<TaskFactory['centre']>[0], 'now'>): TaskModel {
    return this.factory.centre({ ...args, now: this.clock.now() });
  }

  /** Refuses a run's input or labels that its centre task could not hold. */
  checkRunStart(input: Record<string, unknown>, labels: Record<string, string>): void {
    this.factory.checkRunStart(input, labels);
  }

  /** Inserts built tasks in the caller's transaction. */
  insertWithin(m: EntityManager, tasks: readonly TaskModel[], actor: string): Promise<void> {
    return this.repo.insertWithin(m, tasks, 'created', actor);
  }

  /** After the transaction of `insertWithin` committed: due tasks queued. */
  async committed(tasks: readonly TaskModel[]): Promise<void> {
    await this.fast.enqueue(tasks);
  }

  /** Creates one task; a repeated idempotency_key answers the existing task. */
  async create(
    dto: CreateTaskDto,
    opts: { repetition?: RepetitionKind; actor?: string } = {},
  ): Promise<{ task: TaskModel; created: boolean }> {
    const tenant = dto.tenant ?? 'default';
    if (dto.idempotency_key) {
      const existing = await this.repo.findByIdempotencyKey(tenant, dto.idempotency_key);
      if (existing) return { task: existing, created: false };
    }
    const task = await this.factory.build(dto, this.clock.now(), opts.repetition);
    try {
      await this.repo.insert(task, 'created', opts.actor ?? ACTOR);
    } catch (err) {
      // Two creates with one key raced: the loser answers the winner's task.
      if (
        dto.idempotency_key &&
        err instanceof ContractException &&
        err.code === ContractErrorCode.CREATE_CONFLICT
      ) {
        const winner = await this.repo.findByIdempotencyKey(tenant, dto.idempotency_key);
        if (winner) return { task: winner, created: false };
      }
      throw err;
    }
    await this.fast.enqueue([task]);
    return { task, created: true };
  }

  /** Checks a create body as `create` would (type registered, http_url, params, labels), writing nothing. */
  async check(
    dto: CreateTaskDto,
    repetition?: RepetitionKind,
    holes: readonly string[] = [],
  ): Promise<void> {
    await this.factory.build(dto, this.clock.now(), repetition, holes);
  }

  /**
   * Creates every task or none (validated first, inserted in one transaction). A task whose
   * idempotency_key is taken answers the task that holds it, as a single create does, so a batch
   * sent again (after a timeout, say) makes no task twice and answers the same ids.
   */
  async createBatch(dtos: CreateTaskDto[], actor = ACTOR): Promise<TaskModel[]> {
    const now = this.clock.now();
    const keyOf = (d: CreateTaskDto): string | undefined =>
      d.idempotency_key ? `${d.tenant ?? 'default'}/${d.idempotency_key}` : undefined;
    const keys = dtos.map(keyOf).filter((k): k is string => k !== undefined);
    if (new Set(keys).size !== keys.length) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        'two tasks of the batch share an idempotency_key',
      );
    }
    const built: TaskModel[] = [];
    for (const [i, dto] of dtos.entries()) {
      try {
        built.push(await this.factory.build(dto, now));
      } catch (err) {
        if (err instanceof ContractException)
          throw new ContractException(err.code, `tasks[${i}]: ${err.message}`, atItem(err.data, i));
        throw err;
      }
    }
    // Twice at most: a concurrent create may take a key between the look-up and the insert.
    for (let round = 0; ; round++) {
      const existing =
        keys.length === 0
          ? new Map<string, TaskModel>()
          : await this.repo.findByIdempotencyKeys(
              dtos
                .filter((d) => d.idempotency_key)
                .map((d) => ({ tenant: d.tenant ?? 'default', key: d.idempotency_key as string })),
            );
      const fresh = built.filter((_, i) => !existing.has(keyOf(dtos[i]) ?? ''));
      try {
        if (fresh.length > 0) await this.repo.insertMany(fresh, 'created (batch)', actor);
      } catch (err) {
        if (
          round === 0 &&
          err instanceof ContractException &&
          err.code === ContractErrorCode.CREATE_CONFLICT
        )
          continue;
        throw err;
      }
      await this.fast.enqueue(fresh);
      return built.map((t, i) => existing.get(keyOf(dtos[i]) ?? '') ?? t);
    }
  }

  /** The task made under an idempotency key of a tenant, if one was. */
  findByIdempotencyKey(tenant: string, key: string): Promise<TaskModel | undefined> {
    return this.repo.findByIdempotencyKey(tenant, key);
  }

  async get(taskId: string): Promise<TaskModel> {
    const t = await this.repo.findById(taskId);
    if (!t)
      throw new ContractException(
        ContractErrorCode.TASK_NOT_FOUND,
        `task ${taskId} does not exist`,
        { task_id: taskId },
      );
    return t;
  }

  async list(q: ListTasksQuery): Promise<{ items: TaskModel[]; nextCursor: string | null }> {
    const limit = q.limit ?? 50;
    const order: TaskOrder = { sort: q.sort ?? 'created', dir: q.order ?? 'desc' };
    const after = q.cursor ? decodeTaskCursor(q.cursor, order) : undefined;
    const filter = { ...taskFilterOf(q), ...searchFilterOf(q.search) };
    const items = await this.repo.list(filter, after, limit + 1, order);
    const more = items.length > limit;
    const page = more ? items.slice(0, limit) : items;
    return {
      items: page,
      nextCursor: more ? encodeTaskCursor(order, page[page.length - 1]) : null,
    };
  }

  async events(taskId: string): Promise<TaskEventModel[]> {
    await this.get(taskId);
    return this.log.events(taskId);
  }

  async attempts(taskId: string): Promise<TaskAttemptModel[]> {
    await this.get(taskId);
    return this.log.attempts(taskId);
  }

  /**
   * Tasks by type and status, every count above zero: read from the counts kept with each change
   * (TaskCountsRepository), never by counting the task table.
   */
  countsByTypeAndStatus(): Promise<TaskCount[]> {
    return this.counts.totals();
  }
}

/** A batch item's refusal: its schema problems' pointers from the batch body's root. */
function atItem(data: unknown, i: number): unknown {
  const errors = (data as { errors?: unknown } | undefined)?.errors;
  if (!Array.isArray(errors)) return data;
  return {
    ...(data as object),
    errors: (errors as { pointer: string; message: string }[]).map((e) => ({
      ...e,
      pointer: `/tasks/${i}${e.pointer}`,
    })),
  };
}
