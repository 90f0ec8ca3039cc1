import { Clock, systemClock } from '@baton/time';
import { TaskStatus } from '../enums/task-status.enum';
import {
  AttemptLogBatchDto,
  AttemptLogVerdict,
  CompletionCallbackDto,
  HeartbeatCallbackDto,
  LogBatchDto,
  LogLineDto,
  ProgressCallbackDto,
} from '../dto/callback.dto';
import {
  StaleFenceError,
  WorkerCallError,
  WorkerUnavailableError,
  WorkerTimeoutError,
} from '../errors/worker-call.errors';
import { TaskRecord } from '../worker/task-record';
import { WorkerCallbacks } from '../worker/worker-callbacks.interface';
import { JsonHttp, JsonHttpOptions } from './json-http';
import { SchedulerUrls } from './scheduler-urls';

export interface CallbackClientOptions extends JsonHttpOptions {
  /** The scheduler's base URL, e.g. http://127.0.0.1:3000, or several separated by commas. */
  schedulerUrl: string;
  /**
   * Tries for a completion report before giving up to the scheduler's polling. Default 4, the
   * waits between them growing fourfold from 200 ms (200, 800, 3200 ms) on the client's clock.
   */
  completionTries?: number;
}

/** The wait after the first failed completion report; each next one is four times longer. */
const COMPLETION_RETRY_FIRST_MS = 200;

const taskPath = (taskId: string, what: string): string =>
  `/v1/tasks/${encodeURIComponent(taskId)}/${what}`;

/**
 * What an async worker uses to tell the scheduler about a run: completion (`PUT
 * /v1/tasks/{id}/notify`), heartbeat and progress, each with the fence the worker was given.
 * A stale fence (409) means another attempt owns the task now: the report is dropped.
 */
export class CallbackClient implements WorkerCallbacks {
  private readonly http: JsonHttp;
  private readonly urls: SchedulerUrls;
  private readonly clock: Clock;

  constructor(private readonly options: CallbackClientOptions) {
    this.http = new JsonHttp(options);
    this.urls = new SchedulerUrls(options.schedulerUrl);
    this.clock = options.clock ?? systemClock;
  }

  async completed(record: TaskRecord): Promise<void> {
    const body: CompletionCallbackDto = {
      attempt: record.attempt,
      task_status: record.status === TaskStatus.SUCCESS ? TaskStatus.SUCCESS : TaskStatus.FAIL,
      ...(record.result ? { result: record.result } : {}),
      ...(record.error
        ? {
            error: {
              message: record.error.message,
              ...(record.error.code ? { code: record.error.code } : {}),
            },
          }
        : {}),
    };
    const tries = this.options.completionTries ?? 4;
    for (let i = 1; ; i++) {
      try {
        await this.urls.call((url) =>
          this.http.call('PUT', url, taskPath(record.task_id, 'notify'), {}, body, {
            fence: record.fence,
          }),
        );
        return;
      } catch (err) {
        const transient =
          err instanceof WorkerUnavailableError || err instanceof WorkerTimeoutError;
        if (!transient || i >= tries) throw err;
        // A timer that keeps the process up: the report is worth waiting for.
        const wait = COMPLETION_RETRY_FIRST_MS * 4 ** (i - 1);
        await new Promise<void>((resolve) => this.clock.setTimeout(resolve, wait));
      }
    }
  }

  async heartbeat(taskId: string, attempt: number, fence: number): Promise<void> {
    const body: HeartbeatCallbackDto = { attempt };
    await this.quiet(
      this.urls.call((url) =>
        this.http.call('PUT', url, taskPath(taskId, 'heartbeat'), {}, body, { fence }),
      ),
    );
  }

  async progress(
    taskId: string,
    attempt: number,
    fence: number,
    progress: { percent: number; step?: string; message?: string },
  ): Promise<void> {
    const body: ProgressCallbackDto = { attempt, ...progress };
    await this.quiet(
      this.urls.call((url) =>
        this.http.call('PUT', url, taskPath(taskId, 'progress'), {}, body, { fence }),
      ),
    );
  }

  /** Lines of an attempt's log; the caller retries a failure (a 409 or 404: drop them). */
  async logs(taskId: string, attempt: number, fence: number, lines: LogLineDto[]): Promise<void> {
    const body: LogBatchDto = { attempt, lines };
    await this.urls.call((url) =>
      this.http.call('PUT', url, taskPath(taskId, 'logs'), {}, body, { fence }),
    );
  }

  /** Lines of many attempts in one call; a verdict per batch (the caller retries a failure). */
  async logsMany(batches: AttemptLogBatchDto[]): Promise<AttemptLogVerdict[]> {
    const answer = await this.urls.call((url) =>
      // The fences are in the body (per batch), which the signature covers.
      this.http.call<{ results: AttemptLogVerdict[] }>(
        'PUT',
        url,
        '/v1/attempt-logs',
        {},
        { batches },
        { fence: 0 },
      ),
    );
    return answer.results;
  }

  close(): Promise<void> {
    return this.http.close();
  }

  /** A stale fence on a heartbeat or progress report is expected after a takeover. */
  private async quiet(call: Promise<unknown>): Promise<void> {
    try {
      await call;
    } catch (err) {
      if (err instanceof StaleFenceError) return;
      throw err as WorkerCallError;
    }
  }
}
