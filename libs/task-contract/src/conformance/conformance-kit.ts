import { randomBytes } from 'node:crypto';
import { ContractErrorCode } from '../errors/contract.exception';
import { TaskStatus } from '../enums/task-status.enum';
import { isEnvelope } from '../dto/envelope.dto';
import { AuthConfig, authHeaders } from '../worker/auth/request-auth';
import { RawAnswer, RawCall, RawCaller } from './raw-caller';

export interface ConformanceOptions {
  /** The worker's base URL. */
  url: string;
  /** The task type to drive. */
  type: string;
  /** Credentials the worker accepts. The contract requires auth: `none` fails the auth checks. */
  auth: AuthConfig;
  /** params for the tasks the kit creates (they must be valid for the type). */
  params?: Record<string, unknown>;
  /** How long to wait for an async run to reach an outcome. Default 30 s. */
  outcomeTimeoutMs?: number;
  /** Per-request timeout. Default 10 s. */
  requestTimeoutMs?: number;
}

export type CheckVerdict = 'pass' | 'fail' | 'skip';

export interface CheckResult {
  name: string;
  verdict: CheckVerdict;
  /** Why it failed or was skipped, or what was observed when it passed. */
  detail: string;
}

/** A failed expectation inside a check; its message is the check's reason. */
class Expectation extends Error {}
/** A check that cannot apply to this worker (an optional call it does not implement). */
class NotApplicable extends Error {}

type Data = Record<string, unknown>;

/** create_run's start_time in its check: this far ahead, and the room allowed for clock skew. */
const START_AHEAD_MS = 300;
const CLOCK_ROOM_MS = 50;
const OUTCOMES = new Set<string>([TaskStatus.SUCCESS, TaskStatus.FAIL]);

/**
 * Drives a live worker through the whole contract — happy path, idempotent create, illegal
 * transition, stale fence, bad auth, bad body — and reports a verdict per check. Language
 * neutral: it speaks only HTTP, and every answer must be a valid envelope.
 */
export class ConformanceKit {
  private readonly caller: RawCaller;
  private readonly path: string;
  private readonly runId = randomBytes(4).toString('hex');
  private seq = 0;

  constructor(private readonly options: ConformanceOptions) {
    this.caller = new RawCaller(options.url, options.auth, options.requestTimeoutMs ?? 10_000);
    this.path = `/v1/task/${encodeURIComponent(options.type)}`;
  }

  async run(): Promise<CheckResult[]> {
    const results: CheckResult[] = [];
    const check = async (name: string, body: () => Promise<string>): Promise<void> => {
      try {
        results.push({ name, verdict: 'pass', detail: await body() });
      } catch (err) {
        const verdict: CheckVerdict = err instanceof NotApplicable ? 'skip' : 'fail';
        results.push({ name, verdict, detail: err instanceof Error ? err.message : String(err) });
      }
    };

    // ---- happy path on one task ----
    const main = this.taskId('main');
    await check('create: answers CREATE', async () => {
      const data = await this.ok(this.create(main, 1), 'create');
      this.expectStatus(data, TaskStatus.CREATE, 'create');
      this.expect(
        data.task_id === main,
        `create answered task_id ${String(data.task_id)}, expected ${main}`,
      );
      return 'task in CREATE';
    });
    await check('create: idempotent on task_id', async () => {
      const again = await this.ok(this.create(main, 1), 'repeated create');
      this.expectStatus(again, TaskStatus.CREATE, 'repeated create');
      const items = await this.queryItems({ task_id: main });
      this.expect(
        items.length === 1,
        `query found ${items.length} tasks for one task_id after two creates`,
      );
      return 'second create answered the same task, one task stored';
    });
    await check('query: finds the task by task_id and by task_name', async () => {
      const byId = await this.queryItems({ task_id: main });
      this.expect(
        byId.length === 1 && byId[0].task_id === main,
        'query by task_id did not return the task',
      );
      const byName = await this.queryItems({ task_name: this.taskName(main) });
      this.expect(
        byName.some((t) => t.task_id === main),
        'query by task_name did not return the task',
      );
      const none = await this.queryItems({ task_id: this.taskId('never-created') });
      this.expect(none.length === 0, 'query of an unknown task_id returned items');
      return 'by id, by name, and empty for an unknown id';
    });
    await check('status: CREATE, and NONE for an unknown task', async () => {
      const data = await this.ok(this.read(main, 'status'), 'status');
      this.expectStatus(data, TaskStatus.CREATE, 'status');
      const unknown = await this.ok(
        this.read(this.taskId('unknown'), 'status'),
        'status of an unknown task',
      );
      this.expectStatus(unknown, TaskStatus.NONE, 'status of an unknown task');
      return 'CREATE / NONE';
    });
    await check('change: replaces params before the run', async () => {
      const params = { ...(this.options.params ?? {}) };
      const data = await this.optional(this.write(main, 'change', 1, { params }), 'change');
      this.expect(
        JSON.stringify(data.params) === JSON.stringify(params),
        'change did not store the new params',
      );
      this.expectStatus(data, TaskStatus.CREATE, 'change');
      return 'params replaced, status unchanged';
    });
    await check('pause / continue before the run', async () => {
      const paused = await this.optional(this.write(main, 'pause', 1), 'pause');
      this.expectStatus(paused, TaskStatus.PAUSE, 'pause');
      const resumed = await this.optional(this.write(main, 'continue', 1), 'continue');
      this.expectStatus(resumed, TaskStatus.CREATE, 'continue');
      return 'CREATE -> PAUSE -> CREATE';
    });
    await check('prepare: CREATE -> PREPARE', async () => {
      const data = await this.optional(this.write(main, 'prepare', 1), 'prepare');
      this.expectStatus(data, TaskStatus.PREPARE, 'prepare');
      return 'PREPARE';
    });
    let outcome: string | undefined;
    await check('run: answers RUNNING (async) or the outcome (sync)', async () => {
      const data = await this.ok(this.write(main, 'running', 1), 'run');
      const status = String(data.task_status);
      this.expect(
        status === TaskStatus.RUNNING || OUTCOMES.has(status),
        `run answered ${status}, expected RUNNING, SUCCESS or FAIL`,
      );
      if (OUTCOMES.has(status)) outcome = status;
      return `answered ${status}`;
    });
    await check('heartbeat: answers alive and status', async () => {
      const data = await this.ok(this.read(main, 'heartbeat'), 'heartbeat');
      this.expect(typeof data.alive === 'boolean', 'heartbeat data has no boolean alive');
      this.expect(typeof data.task_status === 'string', 'heartbeat data has no task_status');
      return `alive=${String(data.alive)} status=${String(data.task_status)}`;
    });
    await check('progress: answers a percent', async () => {
      const data = await this.optional(this.read(main, 'progress'), 'progress');
      const percent = data.percent;
      this.expect(
        typeof percent === 'number' && percent >= 0 && percent <= 100,
        `progress percent ${String(percent)} is not in [0, 100]`,
      );
      return `${String(percent)}%`;
    });
    await check('outcome: the run reaches SUCCESS or FAIL', async () => {
      if (!outcome) outcome = await this.waitForOutcome(main);
      return outcome;
    });
    await check('summary: answers a summary line', async () => {
      const data = await this.optional(this.read(main, 'summary'), 'summary');
      this.expect(typeof data.summary === 'string', 'summary data has no summary string');
      return JSON.stringify(data.summary);
    });
    await check('rollback: SUCCESS/FAIL -> ROLLBACK', async () => {
      this.needOutcome(outcome);
      const data = await this.optional(this.write(main, 'rollback', 1), 'rollback');
      this.expectStatus(data, TaskStatus.ROLLBACK, 'rollback');
      return 'ROLLBACK';
    });
    await check('clean: -> FINISH', async () => {
      this.needOutcome(outcome);
      const data = await this.optional(this.write(main, 'clean', 1), 'clean');
      this.expectStatus(data, TaskStatus.FINISH, 'clean');
      return 'FINISH';
    });

    // ---- rules ----
    await check('illegal transition: refused with 409 and nothing changes', async () => {
      const id = this.taskId('illegal');
      await this.ok(this.create(id, 1), 'create');
      const answer = await this.write(id, 'continue', 1);
      this.expectError(
        answer,
        409,
        ContractErrorCode.ILLEGAL_TRANSITION,
        'continue of a task that is not paused',
      );
      const after = await this.ok(this.read(id, 'status'), 'status');
      this.expectStatus(after, TaskStatus.CREATE, 'status after the refused call');
      if (outcome) {
        const finished = await this.write(main, 'running', 1);
        this.expectError(
          finished,
          409,
          ContractErrorCode.ILLEGAL_TRANSITION,
          'run of a finished task',
        );
      }
      return 'continue of CREATE and run of FINISH refused';
    });
    await check('notify: accepted; cancel fails a task not yet running', async () => {
      const id = this.taskId('notify');
      await this.ok(this.create(id, 1), 'create');
      await this.optional(
        this.write(id, undefined, 1, { event: 'custom', message: 'conformance' }),
        'notify',
      );
      const cancelled = await this.ok(
        this.write(id, undefined, 1, { event: 'cancel' }),
        'notify cancel',
      );
      this.expectStatus(cancelled, TaskStatus.FAIL, 'notify cancel');
      return 'custom accepted, cancel -> FAIL';
    });
    await check('fence: a lower fence is refused with 409 and changes nothing', async () => {
      const id = this.taskId('fence');
      await this.ok(this.create(id, 10), 'create with fence 10');
      const stale = await this.write(id, 'running', 5);
      this.expectError(stale, 409, ContractErrorCode.STALE_FENCE, 'run with fence 5 after 10');
      const staleCreate = await this.create(id, 4, 2);
      this.expectError(
        staleCreate,
        409,
        ContractErrorCode.STALE_FENCE,
        'create (attempt 2) with fence 4 after 10',
      );
      // A repeated create of the same attempt by a newer holder answers idempotently, but the
      // worker must remember its fence: the holder it replaced is refused from then on.
      await this.ok(this.create(id, 12), 'repeated create (attempt 1) with fence 12');
      const replaced = await this.write(id, 'running', 11);
      this.expectError(
        replaced,
        409,
        ContractErrorCode.STALE_FENCE,
        'run with fence 11 after a repeated create with fence 12',
      );
      const after = await this.ok(this.read(id, 'status'), 'status');
      this.expectStatus(after, TaskStatus.CREATE, 'status after stale calls');
      const missing = await this.send({
        method: 'PUT',
        path: this.path,
        query: { task_id: id, action: 'running' },
        body: {},
        fence: null,
      });
      this.expectError(missing, 400, undefined, 'run without X-Baton-Fence');
      const after2 = await this.ok(this.read(id, 'status'), 'status');
      this.expectStatus(after2, TaskStatus.CREATE, 'status after a call without fence');
      return 'stale fence 409 (also after an idempotent create), missing fence 400, status unchanged';
    });
    await check('retry: a higher attempt re-creates a failed task', async () => {
      const id = this.taskId('retry');
      await this.ok(this.create(id, 1), 'create');
      await this.ok(this.write(id, undefined, 1, { event: 'cancel' }), 'notify cancel');
      const again = await this.ok(this.create(id, 2, 2), 'create attempt 2');
      this.expectStatus(again, TaskStatus.CREATE, 'create attempt 2');
      this.expect(
        again.attempt === 2,
        `attempt is ${String(again.attempt)} after a retry, expected 2`,
      );
      return 'FAIL -> CREATE with attempt 2';
    });
    await check('create_run: create and run in one call (optional)', async () => {
      const id = this.taskId('createrun');
      const send = (): Promise<RawAnswer> =>
        this.send({
          method: 'POST',
          path: this.path,
          query: { action: 'running' },
          body: this.createBody(id, 1),
          fence: 1,
        });
      const first = await send();
      const env = first.json as { code?: number; data?: Data; message?: string };
      // Not offered (an async type, a type with a prepare step, or a worker without the call).
      if (first.status === 400 || first.status === 501)
        throw new NotApplicable(
          `not offered for this type (${first.status}: ${env.message ?? ''})`,
        );
      const data = await this.ok(Promise.resolve(first), 'create_run');
      const status = String(data.task_status);
      if (status === TaskStatus.CREATE || status === TaskStatus.RUNNING)
        throw new NotApplicable(`not offered: the create was answered with ${status}`);
      this.expect(OUTCOMES.has(status), `create_run answered ${status}, expected SUCCESS or FAIL`);
      // A repeat of the same attempt answers what is there (no second run), as status does.
      const again = await this.ok(send(), 'create_run repeated');
      this.expectStatus(again, status as TaskStatus, 'create_run repeated');
      const now = await this.ok(this.read(id, 'status'), 'status');
      this.expectStatus(now, status as TaskStatus, 'status after create_run');
      return `answered ${status}; a repeat answered it again`;
    });
    await check(
      'create_run: the run begins on a start_time a moment ahead (optional)',
      async () => {
        const id = this.taskId('createrun-at');
        const body = this.createBody(id, 1);
        const at = Date.now() + START_AHEAD_MS;
        const answer = await this.send({
          method: 'POST',
          path: this.path,
          query: { action: 'running' },
          body: {
            ...body,
            process_arg: {
              ...(body.process_arg as Data),
              start_time: new Date(at).toISOString(),
            },
          },
          fence: 1,
        });
        if (answer.status === 400 || answer.status === 501)
          throw new NotApplicable(`create_run is not offered for this type (${answer.status})`);
        const data = await this.ok(Promise.resolve(answer), 'create_run');
        const status = String(data.task_status);
        if (!OUTCOMES.has(status)) throw new NotApplicable(`not offered: answered ${status}`);
        // The run cannot have ended before it began (with some room for the two hosts' clocks).
        const early = at - Date.now();
        this.expect(
          early <= CLOCK_ROOM_MS,
          `create_run answered ${early} ms before its start_time: the run did not wait for it`,
        );
        return `answered ${status} after start_time`;
      },
    );
    await check('auth: missing credentials refused with 401', async () => {
      const answer = await this.send({
        method: 'GET',
        path: this.path,
        query: { task_id: main, action: 'status' },
        auth: 'none',
      });
      this.expectError(answer, 401, undefined, 'status without credentials');
      const create = await this.send({
        method: 'POST',
        path: this.path,
        body: this.createBody(this.taskId('noauth'), 1),
        fence: 1,
        auth: 'none',
      });
      this.expectError(create, 401, undefined, 'create without credentials');
      return '401';
    });
    await check('auth: wrong credentials refused with 401', async () => {
      const answer = await this.send({
        method: 'GET',
        path: this.path,
        query: { task_id: main, action: 'status' },
        auth: 'wrong',
      });
      this.expectError(answer, 401, undefined, 'status with wrong credentials');
      return '401';
    });
    await check('auth: a replayed signature is refused with 401', async () => {
      if (this.options.auth.mode !== 'hmac')
        throw new NotApplicable('needs --secret (HMAC); a bearer token has no signature to replay');
      const id = this.taskId('replay');
      const first = await this.send({
        method: 'POST',
        path: this.path,
        body: this.createBody(id, 1),
        fence: 1,
      });
      this.expect(first.status === 200, `signed create answered ${first.status}`);
      const replay = await this.send({
        method: 'POST',
        path: this.path,
        body: this.createBody(id, 1),
        headers: first.sent,
      });
      this.expectError(
        replay,
        401,
        ContractErrorCode.SIGNATURE_REPLAYED,
        'the same signed request sent twice',
      );
      return '401 / 40103';
    });
    await check('auth: a stale timestamp is refused with 401', async () => {
      if (this.options.auth.mode !== 'hmac') throw new NotApplicable('needs --secret (HMAC)');
      const base = new URL(this.options.url);
      const pathWithQuery = `${base.pathname.replace(/\/+$/, '')}${this.path}?task_id=${main}&action=status`;
      const headers = authHeaders(
        this.options.auth,
        { method: 'GET', pathWithQuery, body: '' },
        Date.now() - 3_600_000,
      );
      const answer = await this.send({
        method: 'GET',
        path: this.path,
        query: { task_id: main, action: 'status' },
        headers,
      });
      this.expectError(answer, 401, undefined, 'a signature an hour old');
      return '401';
    });
    await check('auth: the signature covers X-Baton-Fence', async () => {
      if (this.options.auth.mode !== 'hmac') throw new NotApplicable('needs --secret (HMAC)');
      const base = new URL(this.options.url);
      const query = { task_id: main, action: 'status' };
      const pathWithQuery = `${base.pathname.replace(/\/+$/, '')}${this.path}?${new URLSearchParams(query).toString()}`;
      const headers = {
        ...authHeaders(this.options.auth, { method: 'GET', pathWithQuery, fence: '1', body: '' }),
        'x-baton-fence': '999999',
      };
      const answer = await this.send({ method: 'GET', path: this.path, query, headers });
      this.expectError(answer, 401, undefined, 'a fence changed after signing');
      return '401';
    });
    await check('body: invalid JSON refused with 400', async () => {
      const id = this.taskId('badjson');
      const answer = await this.send({
        method: 'POST',
        path: this.path,
        rawBody: `{"task_id":"${id}",`,
        fence: 1,
      });
      this.expectError(answer, 400, undefined, 'invalid JSON');
      await this.expectUnknown(id);
      return '400, nothing created';
    });
    await check('body: unknown field refused with 400', async () => {
      const id = this.taskId('unknownfield');
      const answer = await this.send({
        method: 'POST',
        path: this.path,
        body: { ...this.createBody(id, 1), surprise: true },
        fence: 1,
      });
      this.expectError(answer, 400, undefined, 'create with an unknown top-level field');
      const nested = this.createBody(id, 1);
      (nested.create_info as Data).surprise = 1;
      const answer2 = await this.send({ method: 'POST', path: this.path, body: nested, fence: 1 });
      this.expectError(answer2, 400, undefined, 'create with an unknown field in create_info');
      await this.expectUnknown(id);
      return '400, nothing created';
    });
    await check('body: missing or mistyped field refused with 400', async () => {
      const id = this.taskId('missing');
      const body = this.createBody(id, 1);
      delete body.create_info;
      this.expectError(
        await this.send({ method: 'POST', path: this.path, body, fence: 1 }),
        400,
        undefined,
        'create without create_info',
      );
      const typed = this.createBody(id, 1);
      (typed.create_info as Data).important_level = 'high';
      this.expectError(
        await this.send({ method: 'POST', path: this.path, body: typed, fence: 1 }),
        400,
        undefined,
        'important_level "high"',
      );
      const mismatch = this.createBody(id, 1);
      (mismatch.create_info as Data).task_type = `${this.options.type}.other`;
      this.expectError(
        await this.send({ method: 'POST', path: this.path, body: mismatch, fence: 1 }),
        400,
        undefined,
        'create_info.task_type differs from the path',
      );
      await this.expectUnknown(id);
      return '400 x3, nothing created';
    });
    await check('unknown task type: 404', async () => {
      const other = `/v1/task/${encodeURIComponent(`${this.options.type}-unknown-${this.runId}`)}`;
      const create = await this.send({
        method: 'POST',
        path: other,
        body: this.createBody(this.taskId('type'), 1, `${this.options.type}-unknown-${this.runId}`),
        fence: 1,
      });
      this.expectError(
        create,
        404,
        ContractErrorCode.TASK_TYPE_NOT_FOUND,
        'create of an unknown type',
      );
      const status = await this.send({
        method: 'GET',
        path: other,
        query: { task_id: main, action: 'status' },
      });
      this.expectError(
        status,
        404,
        ContractErrorCode.TASK_TYPE_NOT_FOUND,
        'status of an unknown type',
      );
      return '404 / 40400';
    });
    await check('unknown task: 404 on a changing call', async () => {
      const answer = await this.write(this.taskId('ghost'), 'running', 1);
      this.expectError(answer, 404, ContractErrorCode.TASK_NOT_FOUND, 'run of an unknown task');
      return '404 / 40401';
    });
    return results;
  }

  // ---- requests ----

  private taskId(label: string): string {
    return `conf-${this.runId}-${label}-${++this.seq}`;
  }

  private taskName(taskId: string): string {
    return `conformance ${taskId}`;
  }

  private createBody(taskId: string, attempt: number, type = this.options.type): Data {
    return {
      task_id: taskId,
      attempt,
      create_info: { task_type: type, task_name: this.taskName(taskId), important_level: 5 },
      process_arg: { max_retry: 0 },
      params: { ...(this.options.params ?? {}) },
    };
  }

  private create(taskId: string, fence: number, attempt = 1): Promise<RawAnswer> {
    return this.send({
      method: 'POST',
      path: this.path,
      body: this.createBody(taskId, attempt),
      fence,
    });
  }

  private read(taskId: string, action: string): Promise<RawAnswer> {
    return this.send({ method: 'GET', path: this.path, query: { task_id: taskId, action } });
  }

  private write(
    taskId: string,
    action: string | undefined,
    fence: number,
    body: Data = {},
  ): Promise<RawAnswer> {
    const query: Record<string, string> = { task_id: taskId };
    if (action) query.action = action;
    return this.send({ method: 'PUT', path: this.path, query, body, fence });
  }

  private async queryItems(filter: Record<string, string>): Promise<Data[]> {
    const data = await this.ok(
      this.send({ method: 'GET', path: this.path, query: filter }),
      'query',
    );
    this.expect(Array.isArray(data.items), 'query data has no items array');
    return data.items as Data[];
  }

  /** Every answer must be an envelope whose code agrees with the HTTP status. */
  private async send(call: RawCall): Promise<RawAnswer> {
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
    this.expect(agrees, `${where}: envelope code ${code} does not match HTTP ${answer.status}`);
    return answer;
  }

  private async ok(pending: Promise<RawAnswer>, what: string): Promise<Data> {
    const answer = await pending;
    const env = answer.json as { code: number; message: string; data: unknown };
    this.expect(
      answer.status === 200 && env.code === 0,
      `${what} answered ${answer.status} code ${env.code}: ${env.message}`,
    );
    this.expect(
      typeof env.data === 'object' && env.data !== null,
      `${what} answered no data object`,
    );
    return env.data as Data;
  }

  /** Like ok, but a 501 (code 50100) means the worker declared this optional call absent. */
  private async optional(pending: Promise<RawAnswer>, what: string): Promise<Data> {
    const answer = await pending;
    const env = answer.json as { code: number };
    if (answer.status === 501 && env.code === ContractErrorCode.NOT_IMPLEMENTED) {
      throw new NotApplicable(
        `${what} not implemented (501), which the contract allows for an optional call`,
      );
    }
    return this.ok(Promise.resolve(answer), what);
  }

  private async waitForOutcome(taskId: string): Promise<string> {
    const deadline = Date.now() + (this.options.outcomeTimeoutMs ?? 30_000);
    for (;;) {
      const data = await this.ok(this.read(taskId, 'status'), 'status');
      const status = String(data.task_status);
      if (OUTCOMES.has(status)) return status;
      this.expect(Date.now() < deadline, `no outcome within the timeout; last status ${status}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private async expectUnknown(taskId: string): Promise<void> {
    const data = await this.ok(this.read(taskId, 'status'), 'status');
    this.expectStatus(data, TaskStatus.NONE, `status of ${taskId} after a refused create`);
  }

  private expectStatus(data: Data, status: TaskStatus, what: string): void {
    this.expect(
      data.task_status === status,
      `${what} answered task_status ${String(data.task_status)}, expected ${status}`,
    );
  }

  private expectError(
    answer: RawAnswer,
    status: number,
    code: ContractErrorCode | undefined,
    what: string,
  ): void {
    const env = answer.json as { code: number; message: string };
    this.expect(
      answer.status === status,
      `${what}: expected HTTP ${status}, got ${answer.status} (code ${env.code}: ${env.message})`,
    );
    if (code !== undefined)
      this.expect(env.code === code, `${what}: expected code ${code}, got ${env.code}`);
  }

  private needOutcome(outcome: string | undefined): void {
    if (!outcome)
      throw new Expectation('the run reached no outcome, so this step could not be tried');
  }

  private expect(condition: boolean, message: string): asserts condition {
    if (!condition) throw new Expectation(message);
  }
}

/** Renders results as lines `PASS name — detail`, plus a tally line. */
export function formatResults(results: readonly CheckResult[]): string {
  const lines = results.map((r) => `${r.verdict.toUpperCase().padEnd(4)} ${r.name} — ${r.detail}`);
  const count = (v: CheckVerdict): number => results.filter((r) => r.verdict === v).length;
  // Worded unlike a test runner's summary line, so CI never mistakes it for the suite's.
  lines.push(
    `contract checks — pass ${count('pass')}, fail ${count('fail')}, skip ${count('skip')}`,
  );
  return lines.join('\n');
}
