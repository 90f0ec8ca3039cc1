import { BlockingKind } from '../enums/task-kind.enum';
import { NotFoundLikeCodes } from './registration-codes';
import { JsonHttp, JsonHttpOptions } from './json-http';
import { WorkerCallError } from '../errors/worker-call.errors';

export interface RegistrationOptions extends JsonHttpOptions {
  schedulerUrl: string;
  workerId: string;
  /** The base URL the scheduler calls this worker at. */
  publicUrl: string;
  version: string;
  capacity: number;
  taskTypes: { task_type: string; blocking: BlockingKind; implements: string[] }[];
  /** How often to heartbeat. Default 2000 ms. */
  heartbeatMs?: number;
  /** Called on every failed attempt (for logs). */
  onError?: (err: unknown) => void;
}

/**
 * Keeps a worker registered with the scheduler: registers (retrying until the scheduler answers),
 * then heartbeats; registers again when the scheduler no longer knows it (404).
 */
export class WorkerRegistration {
  private readonly http: JsonHttp;
  private timer: NodeJS.Timeout | undefined;
  private registered = false;
  private stopped = false;

  constructor(private readonly options: RegistrationOptions) {
    this.http = new JsonHttp(options);
  }

  /** Starts the register/heartbeat cycle; resolves after the first attempt, whatever it gave. */
  async start(): Promise<void> {
    await this.tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.http.close();
  }

  private async tick(): Promise<void> {
    try {
      if (!this.registered) await this.register();
      else await this.beat();
    } catch (err) {
      this.options.onError?.(err);
      if (err instanceof WorkerCallError && NotFoundLikeCodes.has(err.code))
        this.registered = false;
    }
    if (!this.stopped) {
      const wait = this.registered ? (this.options.heartbeatMs ?? 2000) : 1000;
      this.timer = setTimeout(() => void this.tick(), wait);
      this.timer.unref();
    }
  }

  private async register(): Promise<void> {
    const o = this.options;
    await this.http.call(
      'POST',
      o.schedulerUrl,
      '/v1/workers',
      {},
      {
        worker_id: o.workerId,
        url: o.publicUrl,
        version: o.version,
        capacity: o.capacity,
        task_types: o.taskTypes,
      },
      { fence: 0 },
    );
    this.registered = true;
  }

  private async beat(): Promise<void> {
    await this.http.call(
      'PUT',
      this.options.schedulerUrl,
      `/v1/workers/${encodeURIComponent(this.options.workerId)}/heartbeat`,
      {},
      {},
      { fence: 0 },
    );
  }
}
