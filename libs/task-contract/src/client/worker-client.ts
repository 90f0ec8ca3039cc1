import { Clock, systemClock } from '@baton/time';
import { CreateTaskRequestDto, NotifyRequestDto, TaskParams } from '../dto/worker-requests.dto';
import {
  HeartbeatDto,
  ProgressViewDto,
  QueryResultDto,
  StatusDto,
  SummaryDto,
  TaskViewDto,
} from '../dto/worker-responses.dto';
import {
  WorkerCallError,
  WorkerTimeoutError,
  WorkerUnavailableError,
} from '../errors/worker-call.errors';
import { OpenSpan, tracing } from '../util/tracing';
import { CallOptions, JsonHttp, JsonHttpOptions } from './json-http';

/** How a call to a worker ended, for metrics: an answer, a refusal, no worker, no answer in time. */
export type WorkerCallOutcome = 'ok' | 'refused' | 'unreachable' | 'timeout' | 'error';

export interface WorkerClientOptions extends JsonHttpOptions {
  /**
   * Told of every call once it ended: its action (`create`, `query`, `running`, `status`, ...),
   * how it ended and how long it took (ms). Must not throw.
   */
  onCall?: (action: string, outcome: WorkerCallOutcome, ms: number) => void;
}

function outcomeOf(err: unknown): WorkerCallOutcome {
  if (err instanceof WorkerTimeoutError) return 'timeout';
  if (err instanceof WorkerUnavailableError) return 'unreachable';
  return err instanceof WorkerCallError ? 'refused' : 'error';
}

const taskPath = (taskType: string): string => `/v1/task/${encodeURIComponent(taskType)}`;

/**
 * The scheduler's side of the contract: one typed method per call of docs/architecture.md.
 * Every call carries X-Baton-Fence, X-Request-Id, traceparent and the auth headers, has a
 * timeout, and ends either with the envelope's data or with a WorkerCallError subclass.
 *
 * @example
 * const client = new WorkerClient({ auth: { mode: 'hmac', secret } });
 * await client.create(url, 'demo.echo', body, { fence: lease.fence });
 */
export class WorkerClient {
  private readonly http: JsonHttp;
  private readonly onCall: WorkerClientOptions['onCall'];
  private readonly traceparent: WorkerClientOptions['traceparent'];
  private readonly clock: Clock;

  constructor(options: WorkerClientOptions) {
    this.http = new JsonHttp(options);
    this.onCall = options.onCall;
    this.traceparent = options.traceparent;
    this.clock = options.clock ?? systemClock;
  }

  create(
    baseUrl: string,
    taskType: string,
    body: CreateTaskRequestDto,
    opts: CallOptions,
  ): Promise<TaskViewDto> {
    return this.call('create', 'POST', baseUrl, taskPath(taskType), {}, body, opts);
  }

  async query(
    baseUrl: string,
    taskType: string,
    filter: { task_id?: string; task_name?: string },
    opts: CallOptions,
  ): Promise<TaskViewDto[]> {
    const res = await this.call<QueryResultDto>(
      'query',
      'GET',
      baseUrl,
      taskPath(taskType),
      filter,
      undefined,
      opts,
    );
    return res.items;
  }

  status(baseUrl: string, taskType: string, taskId: string, opts: CallOptions): Promise<StatusDto> {
    return this.read(baseUrl, taskType, taskId, 'status', opts);
  }

  heartbeat(
    baseUrl: string,
    taskType: string,
    taskId: string,
    opts: CallOptions,
  ): Promise<HeartbeatDto> {
    return this.read(baseUrl, taskType, taskId, 'heartbeat', opts);
  }

  progress(
    baseUrl: string,
    taskType: string,
    taskId: string,
    opts: CallOptions,
  ): Promise<ProgressViewDto> {
    return this.read(baseUrl, taskType, taskId, 'progress', opts);
  }

  summary(
    baseUrl: string,
    taskType: string,
    taskId: string,
    opts: CallOptions,
  ): Promise<SummaryDto> {
    return this.read(baseUrl, taskType, taskId, 'summary', opts);
  }

  notify(
    baseUrl: string,
    taskType: string,
    taskId: string,
    body: NotifyRequestDto,
    opts: CallOptions,
  ): Promise<TaskViewDto> {
    return this.call('notify', 'PUT', baseUrl, taskPath(taskType), { task_id: taskId }, body, opts);
  }

  /** create + run in one request (optional call create_run): the answer is the run's. */
  createAndRun(
    baseUrl: string,
    taskType: string,
    body: CreateTaskRequestDto,
    opts: CallOptions,
  ): Promise<TaskViewDto> {
    const query = { action: 'running' };
    return this.call('create_run', 'POST', baseUrl, taskPath(taskType), query, body, opts);
  }

  run(baseUrl: string, taskType: string, taskId: string, opts: CallOptions): Promise<TaskViewDto> {
    return this.write(baseUrl, taskType, taskId, 'running', {}, opts);
  }

  pause(
    baseUrl: string,
    taskType: string,
    taskId: string,
    opts: CallOptions,
  ): Promise<TaskViewDto> {
    return this.write(baseUrl, taskType, taskId, 'pause', {}, opts);
  }

  continue(
    baseUrl: string,
    taskType: string,
    taskId: string,
    opts: CallOptions,
  ): Promise<TaskViewDto> {
    return this.write(baseUrl, taskType, taskId, 'continue', {}, opts);
  }

  prepare(
    baseUrl: string,
    taskType: string,
    taskId: string,
    opts: CallOptions,
  ): Promise<TaskViewDto> {
    return this.write(baseUrl, taskType, taskId, 'prepare', {}, opts);
  }

  rollback(
    baseUrl: string,
    taskType: string,
    taskId: string,
    opts: CallOptions,
  ): Promise<TaskViewDto> {
    return this.write(baseUrl, taskType, taskId, 'rollback', {}, opts);
  }

  change(
    baseUrl: string,
    taskType: string,
    taskId: string,
    params: TaskParams,
    opts: CallOptions,
  ): Promise<TaskViewDto> {
    return this.write(baseUrl, taskType, taskId, 'change', { params }, opts);
  }

  clean(
    baseUrl: string,
    taskType: string,
    taskId: string,
    opts: CallOptions,
  ): Promise<TaskViewDto> {
    return this.write(baseUrl, taskType, taskId, 'clean', {}, opts);
  }

  /** Closes the keep-alive pools. */
  close(): Promise<void> {
    return this.http.close();
  }

  private read<T>(
    baseUrl: string,
    taskType: string,
    taskId: string,
    action: string,
    opts: CallOptions,
  ): Promise<T> {
    return this.call(
      action,
      'GET',
      baseUrl,
      taskPath(taskType),
      { task_id: taskId, action },
      undefined,
      opts,
    );
  }

  private write(
    baseUrl: string,
    taskType: string,
    taskId: string,
    action: string,
    body: object,
    opts: CallOptions,
  ): Promise<TaskViewDto> {
    return this.call(
      action,
      'PUT',
      baseUrl,
      taskPath(taskType),
      { task_id: taskId, action },
      body,
      opts,
    );
  }

  /**
   * One call, told to `onCall` when it ended. With tracing on (`startTracing`), the call is a
   * client span in the trace it names (or the caller's), and the worker is told that span.
   */
  private async call<T>(action: string, ...args: Parameters<JsonHttp['call']>): Promise<T> {
    const span = tracing().enabled ? this.span(action, args) : undefined;
    if (!this.onCall && !span) return this.http.call<T>(...args);
    const started = this.clock.monotonic();
    try {
      const answer = await this.http.call<T>(...args);
      this.onCall?.(action, 'ok', this.clock.monotonic() - started);
      span?.end({ 'baton.outcome': 'ok' });
      return answer;
    } catch (err) {
      const outcome = outcomeOf(err);
      this.onCall?.(action, outcome, this.clock.monotonic() - started);
      span?.end(
        {
          'baton.outcome': outcome,
          'http.response.status_code': err instanceof WorkerCallError ? err.httpStatus : undefined,
        },
        err instanceof Error ? err.message : String(err),
      );
      throw err;
    }
  }

  /** The client span of a call; the call then carries its traceparent. */
  private span(action: string, args: Parameters<JsonHttp['call']>): OpenSpan | undefined {
    const [method, baseUrl, path, query, , opts] = args;
    const parent = opts.traceparent ?? this.traceparent?.();
    const span = tracing().start(`worker ${action}`, 'client', parent, {
      'baton.action': action,
      'baton.task_type': decodeURIComponent(path.slice(path.lastIndexOf('/') + 1)),
      'baton.task_id': query.task_id,
      'http.request.method': method,
      'server.address': baseUrl,
    });
    if (span) args[5] = { ...opts, traceparent: span.traceparent };
    return span;
  }
}
