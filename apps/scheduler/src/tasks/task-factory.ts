import { Inject, Injectable } from '@nestjs/common';
import {
  BlockingKind,
  ContractErrorCode,
  ContractException,
  RepetitionKind,
  TaskStatus,
  resolvedUrlProblem,
} from '@baton/task-contract';
import { Clock, IdGenerator } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TaskModel } from '../task-store';
import { CENTRE_TASK_TYPE, TaskTypesService } from '../task-types';
import { WorkersService } from '../workers';
import { CreateTaskDto } from './dto/create-task.dto';

const MAX_PARAMS_BYTES = 64 * 1024;

/**
 * A create body made into a task, checked against what the scheduler knows: the type is
 * registered, an `http_url` is one of its workers, params and labels are within bounds, a
 * `callback_url` points nowhere internal, as written or as its name resolves now (unless
 * BATON_WEBHOOK_ALLOW allows it; each send checks the address it connects to again).
 */
@Injectable()
export class TaskFactory {
  /** Callback URLs checked lately (a batch often repeats one): the verdict, and until when. */
  private readonly checkedUrls = new Map<string, { problem: string | undefined; until: number }>();

  constructor(
    private readonly types: TaskTypesService,
    private readonly workers: WorkersService,
    private readonly ids: IdGenerator,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly clock: Clock,
  ) {}

  /**
   * The task `dto` asks for, checked: type registered, worker, callback, sizes, labels, and the
   * params against the type's schema (`holes`: pointers into them a placeholder fills later).
   */
  async build(
    dto: CreateTaskDto,
    now: number,
    made?: RepetitionKind,
    holes: readonly string[] = [],
  ): Promise<TaskModel> {
    const info = dto.create_info;
    // A task made by a timer is timed; a body asks for simple or permanent itself.
    if (made !== undefined && dto.repetition !== undefined && dto.repetition !== made) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `a ${made} task cannot be ${dto.repetition}: leave repetition out of the template`,
        { repetition: dto.repetition },
      );
    }
    const repetition = made ?? dto.repetition ?? RepetitionKind.SIMPLE;
    const type = await this.types.find(info.task_type);
    if (!type) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `task type ${info.task_type} is not registered: no worker has declared it`,
        { task_type: info.task_type },
      );
    }
    if (info.http_url && !(await this.workers.isRegisteredUrl(info.task_type, info.http_url))) {
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `http_url ${info.http_url} is not a registered ${info.task_type} worker`,
        { http_url: info.http_url },
      );
    }
    const callbackProblem = dto.callback_url && (await this.callbackProblem(dto.callback_url));
    if (callbackProblem)
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `callback_url ${callbackProblem}`,
        { callback_url: dto.callback_url },
      );
    const params = dto.params ?? {};
    this.checkParamsSize(params);
    this.types.checkParams(type, params, '/params', holes);
    this.checkLabels(dto.labels ?? {});
    const arg = dto.process_arg ?? {};
    const startTime = arg.start_time ? Date.parse(arg.start_time) : null;
    const initial = arg.task_status ?? TaskStatus.INIT;
    return {
      taskId: this.ids.taskId(),
      taskType: info.task_type,
      taskName: info.task_name,
      tenant: dto.tenant ?? 'default',
      labels: dto.labels ?? {},
      status: initial,
      version: 0,
      attempt: 0,
      moves: 0,
      priority: info.important_level ?? 5,
      blocking: type.blocking,
      repetition,
      params,
      lockKeys: [...new Set(dto.lock_keys ?? [])].sort(),
      requestedUrl: info.http_url ?? null,
      workerId: null,
      workerUrl: null,
      parentTaskId: info.parent_task_id ?? null,
      controlTaskId: info.control_task_id ?? null,
      startTime,
      deadlineSecond: arg.deadline_second ?? null,
      lockTimeout: arg.lock_timeout ?? null,
      maxRetry: arg.max_retry ?? -1,
      idempotencyKey: dto.idempotency_key ?? null,
      callbackUrl: dto.callback_url ?? null,
      // A later start_time is the due time: the task waits in INIT, in the database alone (an
      // index range the Dispatcher reads only when it comes), costing nothing until then.
      dueAt: initial === TaskStatus.PAUSE ? null : Math.max(now, startTime ?? now),
      owner: null,
      leaseUntil: null,
      fence: 0,
      result: null,
      error: null,
      progress: null,
      heartbeatAt: null,
      waiting: null,
      outcome: null,
      pausedFrom: initial === TaskStatus.PAUSE ? TaskStatus.INIT : null,
      cancelRequested: false,
      pendingAction: null,
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
    };
  }

  /**
   * The centre task of a topology run: its status is the run's, and the topologies module moves
   * it (it has no worker and no due time, so the engine never drives it).
   */
  centre(args: {
    name: string;
    version: number;
    tenant: string;
    input: Record<string, unknown>;
    labels: Record<string, string>;
    idempotencyKey: string | null;
    parentTaskId: string | null;
    controlTaskId: string | null;
    now: number;
  }): TaskModel {
    this.checkRunStart(args.input, args.labels);
    return {
      taskId: this.ids.taskId(),
      taskType: CENTRE_TASK_TYPE,
      taskName: args.name,
      tenant: args.tenant,
      labels: args.labels,
      status: TaskStatus.INIT,
      version: 0,
      attempt: 0,
      moves: 0,
      priority: 5,
      blocking: BlockingKind.ASYNC,
      repetition: RepetitionKind.TOPOLOGY,
      params: args.input,
      lockKeys: [],
      requestedUrl: null,
      workerId: null,
      workerUrl: null,
      parentTaskId: args.parentTaskId,
      controlTaskId: args.controlTaskId,
      startTime: null,
      deadlineSecond: null,
      lockTimeout: null,
      maxRetry: 0,
      idempotencyKey: args.idempotencyKey,
      callbackUrl: null,
      dueAt: null,
      owner: null,
      leaseUntil: null,
      fence: 0,
      result: null,
      error: null,
      progress: null,
      heartbeatAt: null,
      waiting: null,
      outcome: null,
      pausedFrom: null,
      cancelRequested: false,
      pendingAction: null,
      createdAt: args.now,
      updatedAt: args.now,
      startedAt: null,
      finishedAt: null,
    };
  }

  private async callbackProblem(url: string): Promise<string | undefined> {
    const now = this.clock.now();
    const known = this.checkedUrls.get(url);
    if (known && known.until > now) return known.problem;
    const { allowNetworks: networks, allowHosts: hosts } = this.config.outgoing.webhooks;
    const problem = await resolvedUrlProblem(url, { networks, hosts });
    if (this.checkedUrls.size >= 1000) this.checkedUrls.clear();
    this.checkedUrls.set(url, { problem, until: now + 10_000 });
    return problem;
  }

  checkParamsSize(params: Record<string, unknown>): void {
    if (Buffer.byteLength(JSON.stringify(params)) > MAX_PARAMS_BYTES) {
      throw new ContractException(
        ContractErrorCode.PAYLOAD_TOO_LARGE,
        `params must be at most ${MAX_PARAMS_BYTES} bytes of JSON`,
      );
    }
  }

  /** A run's input and labels, checked as a task's params and labels are. */
  checkRunStart(input: Record<string, unknown>, labels: Record<string, string>): void {
    this.checkParamsSize(input);
    this.checkLabels(labels);
  }

  private checkLabels(labels: Record<string, unknown>): void {
    for (const [k, v] of Object.entries(labels)) {
      if (
        typeof v !== 'string' ||
        k.length === 0 ||
        k.length > 100 ||
        v.length > 200 ||
        k.includes(':')
      ) {
        throw new ContractException(
          ContractErrorCode.VALIDATION_FAILED,
          `label ${JSON.stringify(k)} must map a name (no ':') to a string of at most 200 characters`,
        );
      }
    }
  }
}
