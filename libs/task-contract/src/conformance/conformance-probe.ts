import { randomBytes } from 'node:crypto';
import { Clock, systemClock } from '@baton/time';
import { ContractErrorCode } from '../errors/contract.exception';
import { TaskStatus } from '../enums/task-status.enum';
import { isEnvelope } from '../dto/envelope.dto';
import { ConformanceOptions } from './conformance-options';
import { Data, Expectation, NotApplicable, expect, expectStatus } from './expectations';
import { RawAnswer, RawCall, RawCaller } from './raw-caller';

/** The statuses a run ends in. */
export const OUTCOMES = new Set<string>([TaskStatus.SUCCESS, TaskStatus.FAIL]);

/**
 * The requests the checks send to the worker under test, on task ids unique to this kit run.
 * Every answer must be a contract envelope whose code agrees with the HTTP status.
 */
export class ConformanceProbe {
  /** The type's path, `/v1/task/{type}`. */
  readonly path: string;
  /** Makes this run's task ids (and an unknown type's name) its own. */
  readonly runId = randomBytes(4).toString('hex');
  /** The kit's time source (ConformanceOptions.clock): every check waits and reads time on it. */
  readonly clock: Clock;
  private readonly caller: RawCaller;
  private seq = 0;

  constructor(readonly options: ConformanceOptions) {
    this.clock = options.clock ?? systemClock;
    this.caller = new RawCaller(
      options.url,
      options.auth,
      options.requestTimeoutMs ?? 10_000,
      this.clock,
    );
    this.path = `/v1/task/${encodeURIComponent(options.type)}`;
  }

  /**
   * Waits `ms` on the kit's clock. The timer keeps the process up (unlike `Clock.sleep`): the CLI
   * may have nothing else holding it while it waits for the worker.
   */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => this.clock.setTimeout(resolve, ms));
  }

  taskId(label: string): string {
    return `conf-${this.runId}-${label}-${++this.seq}`;
  }

  taskName(taskId: string): string {
    return `conformance ${taskId}`;
  }

  createBody(
    taskId: string,
    attempt: number,
    type = this.options.type,
    params = this.options.params,
  ): Data {
    return {
      task_id: taskId,
      attempt,
      create_info: { task_type: type, task_name: this.taskName(taskId), important_level: 5 },
      process_arg: { max_retry: 0 },
      params: { ...(params ?? {}) },
    };
  }

  create(
    taskId: string,
    fence: number,
    attempt = 1,
    params = this.options.params,
  ): Promise<RawAnswer> {
    return this.send({
      method: 'POST',
      path: this.path,
      body: this.createBody(taskId, attempt, this.options.type, params),
      fence,
    });
  }

  /**
   * A task of the type with the long params, created and run: RUNNING. NotApplicable without
   * long params, or when the run does not stay RUNNING (a sync type).
   */
  async startLongRun(label: string, fence: number, attempt = 1): Promise<string> {
    const params = this.options.longParams;
    if (!params) throw new NotApplicable('needs --long-params (a run of a few seconds)');
    const id = this.taskId(label);
    await this.ok(this.create(id, fence, attempt, params), 'create');
    const run = await this.ok(this.write(id, 'running', fence), 'run');
    if (run.task_status !== TaskStatus.RUNNING)
      throw new NotApplicable(
        `the run answered ${String(run.task_status)}, not RUNNING (a sync type)`,
      );
    return id;
  }

  /** The path of another task type's calls. */
  pathOf(type: string): string {
    return `/v1/task/${encodeURIComponent(type)}`;
  }

  read(taskId: string, action: string): Promise<RawAnswer> {
    return this.send({ method: 'GET', path: this.path, query: { task_id: taskId, action } });
  }

  write(
    taskId: string,
    action: string | undefined,
    fence: number,
    body: Data = {},
  ): Promise<RawAnswer> {
    const query: Record<string, string> = { task_id: taskId };
    if (action) query.action = action;
    return this.send({ method: 'PUT', path: this.path, query, body, fence });
  }

  async queryItems(filter: Record<string, string>): Promise<Data[]> {
    const data = await this.ok(
      this.send({ method: 'GET', path: this.path, query: filter }),
      'query',
    );
    expect(Array.isArray(data.items), 'query data has no items array');
    return data.items as Data[];
  }

  /** Every answer must be an envelope whose code agrees with the HTTP status. */
  async send(call: RawCall): Promise<RawAnswer> {
    const answer = await this.caller.send(call);
    const where = `${call.method} ${call.path}${call.query ? `?${new URLSearchParams(call.query).toString()}` : ''}`;
    if (!isEnvelope(answer.json)) {
      throw new Expectation(
        `${where} answered ${answer.status} without the {code, message, data} envelope: ${answer.text.slice(0, 200)}`,
      );
    }
    const code = answer.json.code;
    const agrees =
      code === 0
        ? answer.status >= 200 && answer.status < 300
        : Math.floor(code / 100) === answer.status;
    expect(agrees, `${where}: envelope code ${code} does not match HTTP ${answer.status}`);
    return answer;
  }

  async ok(pending: Promise<RawAnswer>, what: string): Promise<Data> {
    const answer = await pending;
    const env = answer.json as { code: number; message: string; data: unknown };
    expect(
      answer.status === 200 && env.code === 0,
      `${what} answered ${answer.status} code ${env.code}: ${env.message}`,
    );
    expect(typeof env.data === 'object' && env.data !== null, `${what} answered no data object`);
    return env.data as Data;
  }

  /** Like ok, but a 501 (code 50100) means the worker declared this optional call absent. */
  async optional(pending: Promise<RawAnswer>, what: string): Promise<Data> {
    const answer = await pending;
    const env = answer.json as { code: number };
    if (answer.status === 501 && env.code === ContractErrorCode.NOT_IMPLEMENTED) {
      throw new NotApplicable(
        `${what} not implemented (501), which the contract allows for an optional call`,
      );
    }
    return this.ok(Promise.resolve(answer), what);
  }

  async waitForOutcome(taskId: string): Promise<string> {
    const deadline = this.clock.now() + (this.options.outcomeTimeoutMs ?? 30_000);
    for (;;) {
      const data = await this.ok(this.read(taskId, 'status'), 'status');
      const status = String(data.task_status);
      if (OUTCOMES.has(status)) return status;
      expect(this.clock.now() < deadline, `no outcome within the timeout; last status ${status}`);
      await this.wait(100);
    }
  }

  async expectUnknown(taskId: string): Promise<void> {
    const data = await this.ok(this.read(taskId, 'status'), 'status');
    expectStatus(data, TaskStatus.NONE, `status of ${taskId} after a refused create`);
  }
}
