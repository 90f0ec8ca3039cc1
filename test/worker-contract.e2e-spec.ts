import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import {
  CREATE_RUN_START_WAIT_MAX_MS,
  ContractErrorCode,
  CreateTaskRequestDto,
  IllegalTransitionError,
  NotImplementedError,
  NotifyEvent,
  StaleFenceError,
  TaskNotFoundError,
  TaskStatus,
  TaskTypeNotFoundError,
  WorkerAuthError,
  WorkerClient,
  WorkerProtocolError,
  WorkerTimeoutError,
  WorkerUnavailableError,
  WorkerValidationError,
  authHeaders,
} from '@baton/task-contract';
import { findOverlaps, readRunLogs } from '../apps/worker-template/src/run-log/run-log-analysis';
import {
  RunningProcess,
  WORKER_MAIN,
  eventually,
  holds,
  startProcess,
  steady,
} from './support/processes';

const SECRET = 'e2e-secret-0123456789abcdef';
let seq = 0;
const newId = (label: string): string =>
  `${label}-${process.pid}-${Date.now().toString(36)}-${++seq}`;

function body(
  type: string,
  taskId: string,
  params: Record<string, unknown> = {},
  attempt = 1,
): CreateTaskRequestDto {
  return {
    task_id: taskId,
    attempt,
    create_info: { task_type: type, task_name: `e2e ${taskId}` },
    params,
  };
}

describe('template worker, driven through the contract by WorkerClient', () => {
  let dir: string;
  let worker: RunningProcess;
  let url: string;
  let client: WorkerClient;
  const f = (fence = 1) => ({ fence });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-e2e-'));
    worker = await startProcess(WORKER_MAIN, {
      WORKER_PORT: '0',
      BATON_AUTH_MODE: 'hmac',
      BATON_AUTH_SECRET: SECRET,
      WORKER_RUN_LOG: join(dir, 'runs.jsonl'),
      WORKER_ROLLBACK_DIR: join(dir, 'rollback'),
      WORKER_FLAKY_FAILURES: '2',
    });
    url = worker.url;
    client = new WorkerClient({ auth: { mode: 'hmac', secret: SECRET }, timeoutMs: 5000 });
  });

  afterAll(async () => {
    await client?.close();
    await worker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('create and the reads', () => {
    it('creates in CREATE, idempotently on task_id', async () => {
      const id = newId('create');
      const first = await client.create(url, 'demo.echo', body('demo.echo', id, { a: 1 }), f());
      expect(first).toMatchObject({
        task_id: id,
        task_status: TaskStatus.CREATE,
        attempt: 1,
        fence: 1,
        params: { a: 1 },
      });
      const again = await client.create(url, 'demo.echo', body('demo.echo', id, { a: 1 }), f());
      expect(again).toEqual(first);
      expect(await client.query(url, 'demo.echo', { task_name: `e2e ${id}` }, f())).toHaveLength(1);
    });

    it('query finds by task_id and by task_name, and nothing for an unknown id', async () => {
      const id = newId('query');
      await client.create(url, 'demo.echo', body('demo.echo', id), f());
      expect(
        (await client.query(url, 'demo.echo', { task_id: id }, f())).map((t) => t.task_id),
      ).toEqual([id]);
      expect(
        (await client.query(url, 'demo.echo', { task_name: `e2e ${id}` }, f())).map(
          (t) => t.task_id,
        ),
      ).toEqual([id]);
      expect(await client.query(url, 'demo.echo', { task_id: newId('ghost') }, f())).toEqual([]);
    });

    it('status answers NONE for a task the worker does not know', async () => {
      await expect(client.status(url, 'demo.echo', newId('ghost'), f())).resolves.toMatchObject({
        task_status: TaskStatus.NONE,
        attempt: 0,
      });
    });
  });

  describe('demo.echo (sync)', () => {
    it('goes CREATE -> PREPARE -> RUNNING -> SUCCESS -> FINISH, answering the outcome from run', async () => {
      const id = newId('echo');
      await client.create(url, 'demo.echo', body('demo.echo', id, { hello: 'world' }), f());
      expect((await client.prepare(url, 'demo.echo', id, f())).task_status).toBe(
        TaskStatus.PREPARE,
      );
      const ran = await client.run(url, 'demo.echo', id, f());
      expect(ran.task_status).toBe(TaskStatus.SUCCESS);
      expect(ran.result).toEqual({ echo: { hello: 'world' } });
      await expect(client.progress(url, 'demo.echo', id, f())).resolves.toMatchObject({
        percent: 100,
      });
      await expect(client.summary(url, 'demo.echo', id, f())).resolves.toMatchObject({
        summary: 'SUCCESS: echoed 1 field(s)',
      });
      await expect(client.heartbeat(url, 'demo.echo', id, f())).resolves.toMatchObject({
        alive: false,
        task_status: TaskStatus.SUCCESS,
      });
      expect((await client.clean(url, 'demo.echo', id, f())).task_status).toBe(TaskStatus.FINISH);
    });

    it('refuses to run a task twice: the transition table says no', async () => {
      const id = newId('twice');
      await client.create(url, 'demo.echo', body('demo.echo', id), f());
      await client.run(url, 'demo.echo', id, f());
      await expect(client.run(url, 'demo.echo', id, f())).rejects.toBeInstanceOf(
        IllegalTransitionError,
      );
      await expect(client.status(url, 'demo.echo', id, f())).resolves.toMatchObject({
        task_status: TaskStatus.SUCCESS,
      });
    });

    it('starts exactly one run when twenty run calls race', async () => {
      const id = newId('race');
      await client.create(url, 'demo.echo', body('demo.echo', id), f());
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, () => client.run(url, 'demo.echo', id, f())),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results.filter((x): x is PromiseRejectedResult => x.status === 'rejected')) {
        expect(r.reason).toBeInstanceOf(IllegalTransitionError);
      }
      const runs = readRunLogs([join(dir, 'runs.jsonl')]).filter((r) => r.task_id === id);
      expect(runs).toHaveLength(1);
    });

    it('creates and runs in one call (create_run), once, answering the outcome', async () => {
      const id = newId('createrun');
      const ran = await client.createAndRun(url, 'demo.echo', body('demo.echo', id, { a: 1 }), f());
      expect(ran).toMatchObject({ task_status: TaskStatus.SUCCESS, attempt: 1 });
      expect(ran.result).toEqual({ echo: { a: 1 } });
      // A repeat of the same attempt answers what is there: no second run.
      const again = await client.createAndRun(url, 'demo.echo', body('demo.echo', id), f());
      expect(again.task_status).toBe(TaskStatus.SUCCESS);
      const runs = readRunLogs([join(dir, 'runs.jsonl')]).filter((r) => r.task_id === id);
      expect(runs).toHaveLength(1);
      // Not for an async type: 400, nothing created.
      const sleepy = newId('createrun-async');
      await expect(
        client.createAndRun(url, 'demo.sleep', body('demo.sleep', sleepy), f()),
      ).rejects.toBeInstanceOf(WorkerValidationError);
      await expect(client.status(url, 'demo.sleep', sleepy, f())).resolves.toMatchObject({
        task_status: TaskStatus.NONE,
      });
    });

    it('create_run begins the run on a start_time a moment ahead, and at once past the wait limit', async () => {
      const runStart = (id: string): number => {
        const runs = readRunLogs([join(dir, 'runs.jsonl')]).filter((r) => r.task_id === id);
        expect(runs).toHaveLength(1);
        return runs[0].start;
      };
      const soon = newId('createrun-soon');
      const at = Date.now() + 300;
      const ran = await client.createAndRun(
        url,
        'demo.echo',
        { ...body('demo.echo', soon), process_arg: { start_time: new Date(at).toISOString() } },
        f(),
      );
      expect(ran.task_status).toBe(TaskStatus.SUCCESS);
      expect(runStart(soon)).toBeGreaterThanOrEqual(at);
      // Further ahead than the limit: taken as clock skew, not waited for.
      const far = newId('createrun-far');
      const sent = Date.now();
      const farAt = sent + CREATE_RUN_START_WAIT_MAX_MS + 60_000;
      await client.createAndRun(
        url,
        'demo.echo',
        { ...body('demo.echo', far), process_arg: { start_time: new Date(farAt).toISOString() } },
        f(),
      );
      expect(runStart(far)).toBeLessThan(farAt);
    });

    it('create_run cancelled while it waits for its start_time: no run, the cancel is the answer', async () => {
      const id = newId('createrun-cancel');
      // Under the worker's longest wait for a start_time (1 s; further ahead is read as skew).
      const at = Date.now() + 900;
      const answer = client.createAndRun(
        url,
        'demo.echo',
        { ...body('demo.echo', id), process_arg: { start_time: new Date(at).toISOString() } },
        f(),
      );
      // The worker holds the task, waiting for its start_time (the cancel ends the wait).
      await eventually(
        async () =>
          (await client.status(url, 'demo.echo', id, f())).task_status === TaskStatus.CREATE
            ? true
            : undefined,
        800,
        'the task held until its start_time',
      );
      await client.notify(url, 'demo.echo', id, { event: NotifyEvent.CANCEL }, f());
      await expect(answer).resolves.toMatchObject({ task_status: TaskStatus.FAIL });
      const runs = readRunLogs([join(dir, 'runs.jsonl')]).filter((r) => r.task_id === id);
      expect(runs).toHaveLength(0);
    });

    it('has no rollback: 501', async () => {
      const id = newId('norollback');
      await client.create(url, 'demo.echo', body('demo.echo', id), f());
      await client.run(url, 'demo.echo', id, f());
      await expect(client.rollback(url, 'demo.echo', id, f())).rejects.toBeInstanceOf(
        NotImplementedError,
      );
    });
  });

  describe('demo.sleep (async)', () => {
    it('answers RUNNING, beats, reports progress, and reaches SUCCESS', async () => {
      const id = newId('sleep');
      await client.create(
        url,
        'demo.sleep',
        body('demo.sleep', id, { seconds: 0.6, tick_ms: 100 }),
        f(),
      );
      expect((await client.run(url, 'demo.sleep', id, f())).task_status).toBe(TaskStatus.RUNNING);
      await expect(client.heartbeat(url, 'demo.sleep', id, f())).resolves.toMatchObject({
        alive: true,
        task_status: TaskStatus.RUNNING,
      });
      await eventually(
        async () =>
          (await client.progress(url, 'demo.sleep', id, f())).percent > 0 ? true : undefined,
        5000,
        'progress',
      );
      await eventually(
        async () =>
          (await client.status(url, 'demo.sleep', id, f())).task_status === TaskStatus.SUCCESS
            ? true
            : undefined,
        5000,
        'SUCCESS',
      );
      const [task] = await client.query(url, 'demo.sleep', { task_id: id }, f());
      expect(task.result).toEqual({ slept_ms: 600, ticks: 6 });
      await expect(client.heartbeat(url, 'demo.sleep', id, f())).resolves.toMatchObject({
        alive: false,
      });
      await expect(client.summary(url, 'demo.sleep', id, f())).resolves.toMatchObject({
        summary: 'SUCCESS: slept 600 ms',
      });
    });

    it('pauses a running task (progress stands still) and continues it', async () => {
      const id = newId('pause');
      await client.create(
        url,
        'demo.sleep',
        // Long enough that a slow box's first look at its progress comes before it ends.
        body('demo.sleep', id, { seconds: 4, tick_ms: 50 }),
        f(),
      );
      await client.run(url, 'demo.sleep', id, f());
      await eventually(
        async () =>
          (await client.progress(url, 'demo.sleep', id, f())).percent >= 10 ? true : undefined,
        5000,
        'some progress',
      );
      expect((await client.pause(url, 'demo.sleep', id, f())).task_status).toBe(TaskStatus.PAUSE);
      // A tick in flight at the pause may land; then the run stands still.
      const percent = async (): Promise<number> =>
        (await client.progress(url, 'demo.sleep', id, f())).percent;
      const held = await steady(percent, 'the paused run standing still', 150);
      await holds(async () => (await percent()) === held, 500, 'no progress while paused');
      await expect(client.status(url, 'demo.sleep', id, f())).resolves.toMatchObject({
        task_status: TaskStatus.PAUSE,
      });
      expect((await client.continue(url, 'demo.sleep', id, f())).task_status).toBe(
        TaskStatus.RUNNING,
      );
      await eventually(
        async () =>
          (await client.status(url, 'demo.sleep', id, f())).task_status === TaskStatus.SUCCESS
            ? true
            : undefined,
        30_000,
        'SUCCESS',
      );
    });

    it('stops on a cancel notify and ends in FAIL', async () => {
      const id = newId('cancel');
      await client.create(
        url,
        'demo.sleep',
        body('demo.sleep', id, { seconds: 30, tick_ms: 50 }),
        f(),
      );
      await client.run(url, 'demo.sleep', id, f());
      await client.notify(
        url,
        'demo.sleep',
        id,
        { event: NotifyEvent.CANCEL, message: 'operator said stop' },
        f(),
      );
      const failed = await eventually(
        async () => {
          const [t] = await client.query(url, 'demo.sleep', { task_id: id }, f());
          return t.task_status === TaskStatus.FAIL ? t : undefined;
        },
        3000,
        'FAIL',
      );
      expect(failed.error).toEqual({ message: 'operator said stop', code: 'cancelled' });
    });

    it('accepts an event it does not act on without changing the task', async () => {
      const id = newId('custom');
      await client.create(url, 'demo.sleep', body('demo.sleep', id, { seconds: 1 }), f());
      const view = await client.notify(
        url,
        'demo.sleep',
        id,
        { event: NotifyEvent.PARENT_DONE },
        f(),
      );
      expect(view.task_status).toBe(TaskStatus.CREATE);
    });

    it('changes params before the run, checking them, and refuses a change after the outcome', async () => {
      const id = newId('change');
      await client.create(url, 'demo.sleep', body('demo.sleep', id, { seconds: 5 }), f());
      const changed = await client.change(
        url,
        'demo.sleep',
        id,
        { seconds: 0.1, tick_ms: 50 },
        f(),
      );
      expect(changed.params).toEqual({ seconds: 0.1, tick_ms: 50 });
      await expect(
        client.change(url, 'demo.sleep', id, { seconds: -1 }, f()),
      ).rejects.toBeInstanceOf(WorkerValidationError);
      await client.run(url, 'demo.sleep', id, f());
      await eventually(
        async () =>
          (await client.status(url, 'demo.sleep', id, f())).task_status === TaskStatus.SUCCESS
            ? true
            : undefined,
        5000,
        'SUCCESS',
      );
      await expect(
        client.change(url, 'demo.sleep', id, { seconds: 1 }, f()),
      ).rejects.toBeInstanceOf(IllegalTransitionError);
    });

    it('stops the running attempt when a higher attempt is created, so two never overlap', async () => {
      const id = newId('supersede');
      await client.create(
        url,
        'demo.sleep',
        body('demo.sleep', id, { seconds: 30, tick_ms: 50 }),
        f(1),
      );
      await client.run(url, 'demo.sleep', id, f(1));
      const retried = await client.create(
        url,
        'demo.sleep',
        body('demo.sleep', id, { seconds: 0.1, tick_ms: 50 }, 2),
        f(2),
      );
      expect(retried).toMatchObject({ task_status: TaskStatus.CREATE, attempt: 2, fence: 2 });
      await client.run(url, 'demo.sleep', id, f(2));
      await eventually(
        async () =>
          (await client.status(url, 'demo.sleep', id, f(2))).task_status === TaskStatus.SUCCESS
            ? true
            : undefined,
        5000,
        'SUCCESS',
      );
      const runs = readRunLogs([join(dir, 'runs.jsonl')]).filter((r) => r.task_id === id);
      expect(runs.map((r) => r.attempt).sort()).toEqual([1, 2]);
      expect(findOverlaps(runs)).toEqual([]);
    });
  });

  describe('a refused create leaves a live run alone', () => {
    it('keeps running after a create with a stale fence or on another type', async () => {
      const id = newId('zombie');
      await client.create(
        url,
        'demo.sleep',
        body('demo.sleep', id, { seconds: 30, tick_ms: 50 }),
        f(5),
      );
      await client.run(url, 'demo.sleep', id, f(5));
      await expect(
        client.create(url, 'demo.sleep', body('demo.sleep', id, { seconds: 1 }, 2), f(4)),
      ).rejects.toBeInstanceOf(StaleFenceError);
      await expect(
        client.create(url, 'demo.echo', body('demo.echo', id, {}, 2), f(6)),
      ).rejects.toMatchObject({ code: ContractErrorCode.CREATE_CONFLICT });
      // The refused creates left the run going.
      await holds(
        async () => {
          const beat = await client.heartbeat(url, 'demo.sleep', id, f(5));
          return beat.alive === true && beat.task_status === TaskStatus.RUNNING;
        },
        200,
        'the run alive after the refused creates',
      );
      await client.notify(url, 'demo.sleep', id, { event: NotifyEvent.CANCEL }, f(5));
    });
  });

  describe('demo.flaky and demo.rollback', () => {
    it('fails its first two attempts and succeeds on the third', async () => {
      const id = newId('flaky');
      const outcomes: string[] = [];
      for (let attempt = 1; attempt <= 3; attempt++) {
        await client.create(url, 'demo.flaky', body('demo.flaky', id, {}, attempt), f(attempt));
        outcomes.push((await client.run(url, 'demo.flaky', id, f(attempt))).task_status);
      }
      expect(outcomes).toEqual([TaskStatus.FAIL, TaskStatus.FAIL, TaskStatus.SUCCESS]);
    });

    it('undoes its visible change on rollback', async () => {
      const id = newId('rollback');
      const file = join(dir, 'rollback', `${id}.json`);
      await client.create(url, 'demo.rollback', body('demo.rollback', id, { row: 1 }), f());
      expect(existsSync(file)).toBe(false);
      expect((await client.run(url, 'demo.rollback', id, f())).task_status).toBe(
        TaskStatus.SUCCESS,
      );
      expect(existsSync(file)).toBe(true);
      expect((await client.rollback(url, 'demo.rollback', id, f())).task_status).toBe(
        TaskStatus.ROLLBACK,
      );
      expect(existsSync(file)).toBe(false);
      expect((await client.clean(url, 'demo.rollback', id, f())).task_status).toBe(
        TaskStatus.FINISH,
      );
    });

    it('rolls back a failed half-done change too', async () => {
      const id = newId('halfdone');
      const file = join(dir, 'rollback', `${id}.json`);
      await client.create(url, 'demo.rollback', body('demo.rollback', id, { fail: true }), f());
      expect((await client.run(url, 'demo.rollback', id, f())).task_status).toBe(TaskStatus.FAIL);
      expect(existsSync(file)).toBe(true);
      await client.rollback(url, 'demo.rollback', id, f());
      expect(existsSync(file)).toBe(false);
    });
  });

  describe('rules', () => {
    it('refuses a lower fence with StaleFenceError and changes nothing', async () => {
      const id = newId('fence');
      await client.create(url, 'demo.echo', body('demo.echo', id), f(7));
      const err = await client.run(url, 'demo.echo', id, f(6)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StaleFenceError);
      expect((err as StaleFenceError).data).toEqual({ seen: 7, given: 6 });
      await expect(client.status(url, 'demo.echo', id, f())).resolves.toMatchObject({
        task_status: TaskStatus.CREATE,
      });
      const ran = await client.run(url, 'demo.echo', id, f(8));
      expect(ran).toMatchObject({ task_status: TaskStatus.SUCCESS, fence: 8 });
    });

    it('remembers a newer fence from a repeated create of the same attempt', async () => {
      const id = newId('refence');
      await client.create(url, 'demo.echo', body('demo.echo', id), f(1));
      // The same attempt again, from a scheduler that took the claim over: idempotent answer...
      await expect(
        client.create(url, 'demo.echo', body('demo.echo', id), f(2)),
      ).resolves.toMatchObject({ task_status: TaskStatus.CREATE, attempt: 1, fence: 2 });
      // ...and the holder it replaced can no longer start the run.
      const err = await client.run(url, 'demo.echo', id, f(1)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StaleFenceError);
      expect((err as StaleFenceError).data).toEqual({ seen: 2, given: 1 });
      await expect(client.run(url, 'demo.echo', id, f(2))).resolves.toMatchObject({
        task_status: TaskStatus.SUCCESS,
      });
    });

    it('answers 404 for an unknown task type and an unknown task', async () => {
      await expect(
        client.create(url, 'demo.nope', body('demo.nope', newId('t')), f()),
      ).rejects.toBeInstanceOf(TaskTypeNotFoundError);
      await expect(client.status(url, 'demo.nope', 'x', f())).rejects.toBeInstanceOf(
        TaskTypeNotFoundError,
      );
      await expect(client.run(url, 'demo.echo', newId('ghost'), f())).rejects.toBeInstanceOf(
        TaskNotFoundError,
      );
    });

    it('refuses unknown and mistyped fields with 400, creating nothing', async () => {
      const id = newId('bad');
      const extra = { ...body('demo.echo', id), surprise: 1 } as CreateTaskRequestDto;
      const err = await client.create(url, 'demo.echo', extra, f()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkerValidationError);
      expect((err as WorkerValidationError).code).toBe(ContractErrorCode.VALIDATION_FAILED);
      expect((err as WorkerValidationError).message).toContain('surprise');
      const typed = body('demo.echo', id);
      (typed.create_info as unknown as Record<string, unknown>).important_level = 'high';
      await expect(client.create(url, 'demo.echo', typed, f())).rejects.toBeInstanceOf(
        WorkerValidationError,
      );
      await expect(client.status(url, 'demo.echo', id, f())).resolves.toMatchObject({
        task_status: TaskStatus.NONE,
      });
    });

    it('refuses malformed JSON with 400 / 40001 in the envelope', async () => {
      const path = '/v1/task/demo.echo';
      const raw = '{"task_id": "x",';
      const res = await request(`${url}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-baton-fence': '1',
          ...authHeaders(
            { mode: 'hmac', secret: SECRET },
            { method: 'POST', pathWithQuery: path, fence: '1', body: raw },
          ),
        },
        body: raw,
      });
      expect(res.statusCode).toBe(400);
      expect(await res.body.json()).toMatchObject({
        code: ContractErrorCode.MALFORMED_BODY,
        data: null,
      });
    });

    it('refuses a changing call without a fence with 400 / 40002', async () => {
      const id = newId('nofence');
      await client.create(url, 'demo.echo', body('demo.echo', id), f());
      const path = `/v1/task/demo.echo?task_id=${id}&action=running`;
      const res = await request(`${url}${path}`, {
        method: 'PUT',
        headers: authHeaders(
          { mode: 'hmac', secret: SECRET },
          { method: 'PUT', pathWithQuery: path, body: '' },
        ),
      });
      expect(res.statusCode).toBe(400);
      expect(await res.body.json()).toMatchObject({ code: ContractErrorCode.MISSING_FENCE });
    });

    it('refuses a body that is not JSON with 415', async () => {
      const path = '/v1/task/demo.echo';
      const res = await request(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'x-baton-fence': '1' },
        body: 'hi',
      });
      expect(res.statusCode).toBe(415);
      expect(await res.body.json()).toMatchObject({
        code: ContractErrorCode.UNSUPPORTED_MEDIA_TYPE,
      });
    });
  });

  describe('authentication', () => {
    const path = '/v1/task/demo.echo?task_id=any&action=status';

    it('refuses missing credentials with 401', async () => {
      const res = await request(`${url}${path}`);
      expect(res.statusCode).toBe(401);
      expect(await res.body.json()).toMatchObject({ code: ContractErrorCode.UNAUTHENTICATED });
    });

    it('refuses a signature made with the wrong secret', async () => {
      const wrong = new WorkerClient({ auth: { mode: 'hmac', secret: `${SECRET}-wrong` } });
      const err = await wrong.status(url, 'demo.echo', 'any', f()).catch((e: unknown) => e);
      await wrong.close();
      expect(err).toBeInstanceOf(WorkerAuthError);
      expect((err as WorkerAuthError).code).toBe(ContractErrorCode.BAD_SIGNATURE);
    });

    it('refuses a replayed signature', async () => {
      const headers = authHeaders(
        { mode: 'hmac', secret: SECRET },
        { method: 'GET', pathWithQuery: path, body: '' },
      );
      const first = await request(`${url}${path}`, { headers });
      expect(first.statusCode).toBe(200);
      await first.body.dump();
      const replay = await request(`${url}${path}`, { headers });
      expect(replay.statusCode).toBe(401);
      expect(await replay.body.json()).toMatchObject({
        code: ContractErrorCode.SIGNATURE_REPLAYED,
      });
    });

    it('refuses a signature outside the replay window', async () => {
      const headers = authHeaders(
        { mode: 'hmac', secret: SECRET },
        { method: 'GET', pathWithQuery: path, body: '' },
        Date.now() - 600_000,
      );
      const res = await request(`${url}${path}`, { headers });
      expect(res.statusCode).toBe(401);
      expect(await res.body.json()).toMatchObject({ code: ContractErrorCode.SIGNATURE_EXPIRED });
    });
  });

  it('logged every run with an end, and no task ran twice at the same time', () => {
    const runs = readRunLogs([join(dir, 'runs.jsonl')]);
    expect(runs.length).toBeGreaterThan(10);
    expect(runs.filter((r) => r.end === undefined)).toEqual([]);
    expect(findOverlaps(runs)).toEqual([]);
  });
});

describe('WorkerClient transport errors', () => {
  const client = new WorkerClient({
    auth: { mode: 'token', token: 'token-0123456789abcdef' },
    timeoutMs: 300,
  });
  let server: Server;
  let base: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url?.includes('hang')) return; // never answers
      if (req.url?.includes('huge')) {
        const data = { pad: 'x'.repeat(5000) };
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ code: 0, message: 'ok', data }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await client.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('maps a refused connection to WorkerUnavailableError', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    await expect(
      client.status(`http://127.0.0.1:${port}`, 'demo.echo', 'x', { fence: 1 }),
    ).rejects.toBeInstanceOf(WorkerUnavailableError);
  });

  it('maps no answer within the timeout to WorkerTimeoutError', async () => {
    await expect(client.status(base, 'demo.echo', 'hang', { fence: 1 })).rejects.toBeInstanceOf(
      WorkerTimeoutError,
    );
  });

  it('refuses an answer larger than the limit with WorkerProtocolError', async () => {
    const small = new WorkerClient({
      auth: { mode: 'token', token: 'token-0123456789abcdef' },
      maxResponseBytes: 1000,
    });
    try {
      await expect(small.status(base, 'demo.echo', 'huge', { fence: 1 })).rejects.toBeInstanceOf(
        WorkerProtocolError,
      );
      await expect(client.status(base, 'demo.echo', 'huge', { fence: 1 })).resolves.toMatchObject({
        pad: expect.any(String),
      });
    } finally {
      await small.close();
    }
  });

  it('maps an answer without the envelope to WorkerProtocolError', async () => {
    await expect(client.status(base, 'demo.echo', 'x', { fence: 1 })).rejects.toBeInstanceOf(
      WorkerProtocolError,
    );
  });
});
