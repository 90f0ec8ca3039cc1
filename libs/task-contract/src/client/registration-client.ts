import { Logger } from '@nestjs/common';
import { Clock, Timer, systemClock } from '@baton/time';
import { BlockingKind } from '../enums/task-kind.enum';
import { errorMessage } from '../util/error-message';
import { WORKER_CONTRACT_VERSION } from '../openapi/contract-changelog';
import { NotFoundLikeCodes } from './registration-codes';
import { JsonHttp, JsonHttpOptions } from './json-http';
import { SchedulerUrls } from './scheduler-urls';
import { socketErrorCode } from './socket-error';
import { WorkerCallError, WorkerUnavailableError } from '../errors/worker-call.errors';

/** Where the registration logs; Nest's Logger fits. */
export interface RegistrationLogger {
  debug(message: string): void;
  warn(message: string): void;
}

export interface RegistrationOptions extends JsonHttpOptions {
  /** The scheduler's base URL, or several separated by commas (any instance serves every call). */
  schedulerUrl: string;
  workerId: string;
  /** The base URL the scheduler calls this worker at. */
  publicUrl: string;
  version: string;
  capacity: number;
  taskTypes: {
    task_type: string;
    blocking: BlockingKind;
    implements: string[];
    defaults?: { max_retry?: number; backoff_base_ms?: number; backoff_max_ms?: number };
    params_schema?: Record<string, unknown>;
    result_schema?: Record<string, unknown>;
  }[];
  /** How often to heartbeat. Default 2000 ms. */
  heartbeatMs?: number;
  /**
   * How long after the first try a scheduler that is not listening yet (connection refused or
   * reset) is simply waited for, retried quickly and logged at debug only. Default 30 000 ms.
   */
  startupGraceMs?: number;
  /**
   * Gets a warning once per distinct problem (until the next success), debug lines for the
   * rest. Default: a Nest Logger with context `WorkerRegistration`.
   */
  logger?: RegistrationLogger;
}

/** Retry period while not registered, as it has always been once past start-up. */
const RETRY_MS = 1000;
/** The first start-up retry; it doubles up to RETRY_MS, so a late scheduler is found quickly. */
const STARTUP_FIRST_RETRY_MS = 100;
const DEFAULT_STARTUP_GRACE_MS = 30_000;
/** No answer because nothing listens (yet) at the scheduler's address, or it hung up at once. */
const NOT_LISTENING_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET']);

/**
 * Keeps a worker registered with the scheduler: registers (retrying until the scheduler answers),
 * then heartbeats; registers again when the scheduler no longer knows it (404).
 *
 * Workers usually start before the scheduler: while it is not listening yet, within the start-up
 * grace period, retries are quiet. After that, and at once for an answer that says something is
 * wrong (401, 400 ...), each distinct problem is warned about once, not on every retry.
 */
export class WorkerRegistration {
  private readonly http: JsonHttp;
  private readonly urls: SchedulerUrls;
  private readonly logger: RegistrationLogger;
  private readonly clock: Clock;
  private timer: Timer | undefined;
  private registered = false;
  private stopped = false;
  private firstTryAt: number | undefined;
  private everRegistered = false;
  /** Said once that a scheduler refused the schema fields. */
  private saidWithoutSchemas = false;
  /** Failed tries before the first registration: the start-up backoff's exponent. */
  private startupFailures = 0;
  /** The registration heartbeat interval the scheduler's answer asked for (`timing`). */
  private askedHeartbeatMs: number | undefined;
  /** Problems already warned about since the last success. */
  private readonly warned = new Set<string>();

  constructor(private readonly options: RegistrationOptions) {
    this.http = new JsonHttp(options);
    this.urls = new SchedulerUrls(options.schedulerUrl);
    this.logger = options.logger ?? new Logger('WorkerRegistration');
    this.clock = options.clock ?? systemClock;
  }

  /** Starts the register/heartbeat cycle; resolves after the first attempt, whatever it gave. */
  async start(): Promise<void> {
    await this.tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    await this.http.close();
  }

  private async tick(): Promise<void> {
    this.firstTryAt ??= this.clock.now();
    try {
      if (!this.registered) await this.register();
      else await this.beat();
      this.warned.clear();
    } catch (err) {
      this.report(err);
      if (!this.everRegistered) this.startupFailures++;
      if (err instanceof WorkerCallError && NotFoundLikeCodes.has(err.code))
        this.registered = false;
    }
    if (!this.stopped) {
      this.timer = this.clock.setTimeout(() => void this.tick(), this.nextWait()).unref();
    }
  }

  private nextWait(): number {
    if (this.registered)
      return Math.min(this.options.heartbeatMs ?? 2000, this.askedHeartbeatMs ?? Infinity);
    if (this.everRegistered) return RETRY_MS;
    return Math.min(RETRY_MS, STARTUP_FIRST_RETRY_MS * 2 ** (this.startupFailures - 1));
  }

  private report(err: unknown): void {
    const message = `registration: ${errorMessage(err)}`;
    if (this.startingUp() && notListening(err)) {
      this.logger.debug(`${message} (the scheduler is not up yet; retrying)`);
      return;
    }
    const problem = problemOf(err);
    if (this.warned.has(problem)) {
      this.logger.debug(message);
      return;
    }
    this.warned.add(problem);
    this.logger.warn(message);
  }

  /** Before the first registration and within the grace period from the first try. */
  private startingUp(): boolean {
    const grace = this.options.startupGraceMs ?? DEFAULT_STARTUP_GRACE_MS;
    return !this.everRegistered && this.clock.now() - (this.firstTryAt ?? 0) < grace;
  }

  /**
   * With the schemas first, every time (the instance that answers may have been upgraded since);
   * a scheduler older than contract 1.4.0 refuses them as unknown fields: then without them (it
   * checks no params either way), said once.
   */
  private async register(): Promise<void> {
    try {
      await this.registerOnce(true);
    } catch (err) {
      if (!refusesSchemas(err)) throw err;
      if (!this.saidWithoutSchemas)
        this.logger.warn(
          'registration: the scheduler does not take params_schema/result_schema (older than worker contract 1.4.0): registered without them, so it does not check params; create() still does',
        );
      this.saidWithoutSchemas = true;
      await this.registerOnce(false);
    }
  }

  private async registerOnce(withSchemas: boolean): Promise<void> {
    const o = this.options;
    const taskTypes = withSchemas
      ? o.taskTypes
      : o.taskTypes.map(({ params_schema: _p, result_schema: _r, ...t }) => t);
    const answer = await this.urls.call((url) =>
      this.http.call<{ timing?: { heartbeat_interval_ms?: unknown } }>(
        'POST',
        url,
        '/v1/workers',
        {},
        {
          worker_id: o.workerId,
          url: o.publicUrl,
          version: o.version,
          contract_version: WORKER_CONTRACT_VERSION,
          capacity: o.capacity,
          task_types: taskTypes,
        },
        { fence: 0 },
      ),
    );
    this.registered = true;
    this.everRegistered = true;
    // The scheduler says how often it wants to hear from this worker: never less often.
    const asked = answer?.timing?.heartbeat_interval_ms;
    this.askedHeartbeatMs = typeof asked === 'number' && asked > 0 ? asked : undefined;
  }

  private async beat(): Promise<void> {
    await this.urls.call((url) =>
      this.http.call(
        'PUT',
        url,
        `/v1/workers/${encodeURIComponent(this.options.workerId)}/heartbeat`,
        {},
        {},
        { fence: 0 },
      ),
    );
  }
}

/** A 400 of a scheduler that does not know the schema fields of a declared type. */
function refusesSchemas(err: unknown): boolean {
  return (
    err instanceof WorkerCallError &&
    err.httpStatus === 400 &&
    /(params|result)_schema should not exist/.test(err.message)
  );
}

function notListening(err: unknown): boolean {
  return (
    err instanceof WorkerUnavailableError &&
    err.httpStatus === 0 &&
    NOT_LISTENING_CODES.has(socketErrorCode(err.cause) ?? '')
  );
}

/**
 * What makes two failures the same problem: the kind of answer (or of no answer), not the
 * message, which may carry details that change from one try to the next.
 */
function problemOf(err: unknown): string {
  if (!(err instanceof WorkerCallError)) return errorMessage(err);
  return [err.name, err.code, err.httpStatus, socketErrorCode(err.cause) ?? ''].join(' ');
}
