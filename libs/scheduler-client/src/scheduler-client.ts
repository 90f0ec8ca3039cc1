import { randomUUID } from 'node:crypto';
import {
  BatonApiError,
  BatonProtocolError,
  BatonRateLimitedError,
  BatonUnavailableError,
  errorClassFor,
} from './errors';
import { SchedulerClientClock, deadline, processClock, sleep } from './clock';
import { socketCode, unsentCode } from './socket-codes';
import {
  CreateTask,
  CreateTaskBatch,
  Task,
  TaskAttempt,
  TaskEvent,
  TaskListQuery,
  TaskPage,
  TaskStatus,
  Worker,
} from './types';

export interface SchedulerClientOptions {
  /** Base URLs of the scheduler instances (any of them answers any call). */
  urls: readonly string[];
  /** Per request. Default 10 s. */
  timeoutMs?: number;
  /** Tries of one call in all, spread over the instances. Default 8. */
  maxTries?: number;
  /** First wait between two rounds over the instances; doubles up to `backoffMaxMs`. Default 100 ms. */
  backoffMs?: number;
  /** Longest wait between two tries (also caps a server's Retry-After). Default 5 s. */
  backoffMaxMs?: number;
  /**
   * How long an instance that could not be reached (refused, reset, timed out, restarting or
   * draining) comes after the others; its first answer clears it. Default 1 s.
   */
  downMs?: number;
  /** The API key every call is made with (`Authorization: Bearer <key>`). */
  apiKey?: string;
  /** Sent with every call. */
  headers?: Record<string, string>;
  /**
   * The time source: per-try timeouts, backoff waits, `waitForTask`'s polling, instances marked
   * down. A test passes a ManualClock (@baton/time) to move time instead of waiting. Default: the
   * process's clock.
   */
  clock?: SchedulerClientClock;
  /** Called before each retry: the call, what failed, on which instance, and the wait. */
  onRetry?: (info: {
    request: ApiRequest;
    url: string;
    error: BatonApiError;
    attempt: number;
    waitMs: number;
  }) => void;
}

/** Options of one call. */
export interface CallOptions {
  /** The create's Idempotency-Key; the client makes one when it is not given. */
  idempotencyKey?: string;
  /** Stops waiting (and retrying) when aborted. */
  signal?: AbortSignal;
}

/** One call to the scheduler, as `call` takes it (for routes without a method of their own). */
export interface ApiRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | readonly string[] | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * `any`: the call may be sent again whatever happened to the last try (reads, keyed creates).
   * `unsent`: only when the last try provably never reached a scheduler (connection refused, or an
   * answer that says nothing was done: 503, 429). Actions (cancel, retry, ...) are `unsent`.
   */
  resend: 'any' | 'unsent';
  signal?: AbortSignal;
}

/** The scheduler's code for "too busy now": the instance is up, and says when to come back. */
const OVERLOADED = 50302;

/**
 * A typed client of the scheduler's public API for the teams that submit work. It knows several
 * scheduler URLs and spreads calls over them; a call that fails because an instance is down,
 * restarting or overloaded goes to the next one, with backoff between rounds and a server's
 * `Retry-After` honoured. Creates carry an `Idempotency-Key` (made here unless given), so a create
 * sent twice makes one task. Failures come out as `BatonApiError` subclasses.
 *
 * ```ts
 * const baton = new SchedulerClient({ urls: ['http://s1:3000', 'http://s2:3000'] });
 * const task = await baton.createTask({ create_info: { task_type: 'db.backup', task_name: 'nightly' } });
 * const done = await baton.waitForTask(task.task_id, ['FINISH']);
 * ```
 */
export class SchedulerClient {
  private readonly urls: string[];
  private next = 0;
  /** Instances that failed a call just now, and until when they come after the others. */
  private readonly down = new Map<string, number>();
  private readonly timeoutMs: number;
  private readonly maxTries: number;
  private readonly backoffMs: number;
  private readonly backoffMaxMs: number;
  private readonly clock: SchedulerClientClock;

  constructor(private readonly options: SchedulerClientOptions) {
    if (options.urls.length === 0) throw new Error('SchedulerClient needs at least one URL');
    this.urls = options.urls.map((u) => u.replace(/\/+$/, ''));
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxTries = Math.max(1, options.maxTries ?? 8);
    this.backoffMs = options.backoffMs ?? 100;
    this.backoffMaxMs = options.backoffMaxMs ?? 5_000;
    this.clock = options.clock ?? processClock;
  }

  /** Creates a task; a repeat under the same key answers the task the first one made. */
  createTask(body: CreateTask, opts: CallOptions = {}): Promise<Task> {
    return this.call<Task>({
      method: 'POST',
      path: '/v1/tasks',
      body,
      headers: { 'idempotency-key': opts.idempotencyKey ?? randomUUID() },
      resend: 'any',
      signal: opts.signal,
    });
  }

  /**
   * Creates up to 500 tasks in one call, all or none. Each task that has no `idempotency_key` gets one, so a
   * batch sent again makes no task twice.
   */
  createTasks(batch: CreateTaskBatch, opts: CallOptions = {}): Promise<Task[]> {
    const tasks = batch.tasks.map((t) => ({
      ...t,
      idempotency_key: t.idempotency_key ?? randomUUID(),
    }));
    return this.call<Task[]>({
      method: 'POST',
      path: '/v1/tasks/batch',
      body: { ...batch, tasks },
      resend: 'any',
      signal: opts.signal,
    });
  }

  getTask(taskId: string, opts: CallOptions = {}): Promise<Task> {
    return this.read(`/v1/tasks/${encodeURIComponent(taskId)}`, undefined, opts);
  }

  listTasks(query: TaskListQuery = {}, opts: CallOptions = {}): Promise<TaskPage> {
    return this.read('/v1/tasks', query as ApiRequest['query'], opts);
  }

  listWorkers(opts: CallOptions = {}): Promise<Worker[]> {
    return this.read('/v1/workers', undefined, opts);
  }

  /** Drains a worker (no new tasks go to it; those it runs finish there), or with `false` ends it. */
  drainWorker(workerId: string, drain = true, opts: CallOptions = {}): Promise<Worker> {
    return this.workerControl(drain ? 'POST' : 'DELETE', workerId, 'drain', undefined, opts);
  }

  /** No tasks go to the worker, for `reason`, until `until` (ISO time) or until lifted. */
  blacklistWorker(
    workerId: string,
    reason: string,
    until?: string,
    opts: CallOptions = {},
  ): Promise<Worker> {
    return this.workerControl('POST', workerId, 'blacklist', { reason, until }, opts);
  }

  /** Lifts a worker's blacklist, set by hand or after call failures. */
  unblacklistWorker(workerId: string, opts: CallOptions = {}): Promise<Worker> {
    return this.workerControl('DELETE', workerId, 'blacklist', undefined, opts);
  }

  events(taskId: string, opts: CallOptions = {}): Promise<TaskEvent[]> {
    return this.read(`/v1/tasks/${encodeURIComponent(taskId)}/events`, undefined, opts);
  }

  attempts(taskId: string, opts: CallOptions = {}): Promise<TaskAttempt[]> {
    return this.read(`/v1/tasks/${encodeURIComponent(taskId)}/attempts`, undefined, opts);
  }

  cancel(taskId: string, opts: CallOptions = {}): Promise<Task> {
    return this.act(taskId, 'cancel', opts);
  }

  retry(taskId: string, opts: CallOptions = {}): Promise<Task> {
    return this.act(taskId, 'retry', opts);
  }

  pause(taskId: string, opts: CallOptions = {}): Promise<Task> {
    return this.act(taskId, 'pause', opts);
  }

  continue(taskId: string, opts: CallOptions = {}): Promise<Task> {
    return this.act(taskId, 'continue', opts);
  }

  rollback(taskId: string, opts: CallOptions = {}): Promise<Task> {
    return this.act(taskId, 'rollback', opts);
  }

  /**
   * Polls the task until its status is one of `statuses` (default: FINISH) and answers it; throws
   * a `BatonApiError` (code 0) when `timeoutMs` passes first.
   */
  async waitForTask(
    taskId: string,
    statuses: readonly TaskStatus[] = ['FINISH'],
    {
      timeoutMs = 60_000,
      pollMs = 250,
      signal,
    }: CallOptions & { timeoutMs?: number; pollMs?: number } = {},
  ): Promise<Task> {
    const until = this.clock.now() + timeoutMs;
    for (;;) {
      const task = await this.getTask(taskId, { signal });
      if (statuses.includes(task.task_status)) return task;
      if (this.clock.now() + pollMs > until)
        throw new BatonApiError(
          `task ${taskId} is ${task.task_status}, not ${statuses.join(' or ')}, after ${timeoutMs} ms`,
          0,
          0,
          task,
        );
      await sleep(this.clock, pollMs, signal);
    }
  }

  private read<T>(path: string, query: ApiRequest['query'], opts: CallOptions): Promise<T> {
    return this.call<T>({ method: 'GET', path, query, resend: 'any', signal: opts.signal });
  }

  /** A change of a worker's state: the same state however many times it is sent. */
  private workerControl(
    method: 'POST' | 'DELETE',
    workerId: string,
    what: 'drain' | 'blacklist',
    body: unknown,
    opts: CallOptions,
  ): Promise<Worker> {
    const path = `/v1/workers/${encodeURIComponent(workerId)}/${what}`;
    return this.call<Worker>({ method, path, body, resend: 'any', signal: opts.signal });
  }

  private act(taskId: string, action: string, opts: CallOptions): Promise<Task> {
    return this.call<Task>({
      method: 'POST',
      path: `/v1/tasks/${encodeURIComponent(taskId)}/${action}`,
      resend: 'unsent',
      signal: opts.signal,
    });
  }

  /**
   * One call, tried on the instances in turn until one answers it (or the tries run out). Each try
   * goes to the next instance in rotation that this call has not tried and that has not failed
   * lately (one that failed is tried last, the one back soonest first); after a round over all of
   * them, a backoff.
   */
  async call<T>(req: ApiRequest): Promise<T> {
    let last: BatonApiError | undefined;
    let tried = new Set<string>();
    let round = 0;
    const start = this.next++;
    for (let attempt = 1; attempt <= this.maxTries; attempt++) {
      if (tried.size === this.urls.length) tried = new Set();
      const url = this.pick(start, tried);
      tried.add(url);
      try {
        const answer = await this.send<T>(url, req);
        this.down.delete(url);
        return answer;
      } catch (err) {
        const error = err as BatonApiError & { unsent?: boolean; retryAfterMs?: number };
        // Unreachable, restarting or draining: the others first for a while. An overloaded one is
        // up (its Retry-After paces the retry); marking it down would pile its load on the rest.
        if (error instanceof BatonUnavailableError && error.code !== OVERLOADED)
          this.down.set(url, this.clock.now() + (this.options.downMs ?? 1000));
        if (!this.retryable(req, error) || attempt === this.maxTries) throw error;
        last = error;
        // The next try goes to another instance at once; after a full round, wait.
        const roundDone = tried.size === this.urls.length;
        if (roundDone) round++;
        const backoff = roundDone
          ? Math.min(this.backoffMaxMs, this.backoffMs * 2 ** Math.max(0, round - 1))
          : 0;
        // A Retry-After is the refusing instance's: another one is tried at once.
        const paced = Math.max(backoff * (0.5 + Math.random() / 2), error.retryAfterMs ?? 0);
        const waitMs = roundDone ? Math.min(this.backoffMaxMs, paced) : 0;
        this.options.onRetry?.({ request: req, url, error, attempt, waitMs });
        if (waitMs > 0) await sleep(this.clock, waitMs, req.signal);
      }
    }
    throw last ?? new BatonUnavailableError('no scheduler answered', 0, 0);
  }

  /**
   * The instance for the next try: in rotation from `start`, the first this call has not tried
   * that is not marked down; when every untried one is, the one that comes back soonest.
   */
  private pick(start: number, tried: ReadonlySet<string>): string {
    const now = this.clock.now();
    let fallback: string | undefined;
    for (let k = 0; k < this.urls.length; k++) {
      const url = this.urls[(start + k) % this.urls.length];
      if (tried.has(url)) continue;
      const until = this.down.get(url) ?? 0;
      if (until <= now) return url;
      if (fallback === undefined || until < (this.down.get(fallback) ?? 0)) fallback = url;
    }
    return fallback ?? this.urls[start % this.urls.length];
  }

  private retryable(req: ApiRequest, err: BatonApiError & { unsent?: boolean }): boolean {
    if (req.signal?.aborted) return false;
    if (err instanceof BatonRateLimitedError) return true;
    if (!(err instanceof BatonUnavailableError)) return false;
    if (err.httpStatus === 503 || err.httpStatus === 429) return true;
    return req.resend === 'any' || err.unsent === true;
  }

  private async send<T>(base: string, req: ApiRequest): Promise<T> {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query ?? {}))
      for (const one of Array.isArray(v) ? v : [v])
        if (one !== undefined) qs.append(k, String(one));
    const target = `${base}${req.path}${qs.size > 0 ? `?${qs.toString()}` : ''}`;
    // The try's deadline, cancelled once the answer is read: no timer outlives the try.
    const limit = deadline(this.clock, this.timeoutMs, req.signal);
    return this.sendOnce<T>(base, target, req, limit.signal).finally(() => limit.cancel());
  }

  private async sendOnce<T>(base: string, target: string, req: ApiRequest, signal: AbortSignal) {
    let res: Response;
    try {
      res = await fetch(target, {
        method: req.method,
        headers: {
          accept: 'application/json',
          ...(req.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
          ...this.options.headers,
          ...req.headers,
        },
        body: req.body !== undefined ? JSON.stringify(req.body) : undefined,
        signal,
      });
    } catch (err) {
      if (req.signal?.aborted) throw err;
      const code = socketCode(err);
      const timedOut = (err as Error).name === 'TimeoutError';
      const e = new BatonUnavailableError(
        `${req.method} ${target}: ${timedOut ? `no answer within ${this.timeoutMs} ms` : (code ?? (err as Error).message)}`,
        0,
        0,
        null,
        base,
        { cause: err },
      );
      Object.assign(e, { unsent: unsentCode(code) });
      throw e;
    }
    const text = await res.text();
    let env: { code?: unknown; message?: unknown; data?: unknown };
    try {
      env = JSON.parse(text) as typeof env;
    } catch {
      env = {};
    }
    if (typeof env.code !== 'number' || typeof env.message !== 'string') {
      const Cls = res.status >= 500 ? BatonUnavailableError : BatonProtocolError;
      throw new Cls(
        `${req.method} ${target} answered ${res.status} without the {code, message, data} envelope`,
        0,
        res.status,
        text.slice(0, 500),
        base,
      );
    }
    if (res.ok && env.code === 0) return env.data as T;
    const Cls = errorClassFor(res.status);
    const e = new Cls(env.message, env.code, res.status, env.data ?? null, base);
    const retryAfter = Number(res.headers.get('retry-after'));
    if (Number.isFinite(retryAfter) && retryAfter > 0)
      Object.assign(e, { retryAfterMs: retryAfter * 1000 });
    throw e;
  }
}
