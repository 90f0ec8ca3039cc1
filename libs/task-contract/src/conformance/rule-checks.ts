import { ContractErrorCode } from '../errors/contract.exception';
import { TaskStatus } from '../enums/task-status.enum';
import { Check } from './conformance-check';
import { OUTCOMES } from './conformance-probe';
import { Data, NotApplicable, expect, expectError, expectStatus } from './expectations';
import { RawAnswer } from './raw-caller';

/** create_run's start_time in its check: this far ahead, and the room allowed for clock skew. */
const START_AHEAD_MS = 300;
const CLOCK_ROOM_MS = 50;

/** The contract's rules: transitions, notify/cancel, fences, retries, create_run. */
export const RULE_CHECKS: readonly Check[] = [
  {
    name: 'illegal transition: refused with 409 and nothing changes',
    run: async (ctx) => {
      const { probe, main } = ctx;
      const id = probe.taskId('illegal');
      await probe.ok(probe.create(id, 1), 'create');
      const answer = await probe.write(id, 'continue', 1);
      expectError(
        answer,
        409,
        ContractErrorCode.ILLEGAL_TRANSITION,
        'continue of a task that is not paused',
      );
      const after = await probe.ok(probe.read(id, 'status'), 'status');
      expectStatus(after, TaskStatus.CREATE, 'status after the refused call');
      if (ctx.outcome) {
        const finished = await probe.write(main, 'running', 1);
        expectError(finished, 409, ContractErrorCode.ILLEGAL_TRANSITION, 'run of a finished task');
      }
      return 'continue of CREATE and run of FINISH refused';
    },
  },
  {
    name: 'notify: accepted; cancel fails a task not yet running',
    section: 'Calls',
    run: async ({ probe }) => {
      const id = probe.taskId('notify');
      await probe.ok(probe.create(id, 1), 'create');
      await probe.optional(
        probe.write(id, undefined, 1, { event: 'custom', message: 'conformance' }),
        'notify',
      );
      const cancelled = await probe.ok(
        probe.write(id, undefined, 1, { event: 'cancel' }),
        'notify cancel',
      );
      expectStatus(cancelled, TaskStatus.FAIL, 'notify cancel');
      return 'custom accepted, cancel -> FAIL';
    },
  },
  {
    name: 'fence: a lower fence is refused with 409 and changes nothing',
    section: 'Headers the scheduler sends',
    run: async ({ probe }) => {
      const id = probe.taskId('fence');
      await probe.ok(probe.create(id, 10), 'create with fence 10');
      const stale = await probe.write(id, 'running', 5);
      expectError(stale, 409, ContractErrorCode.STALE_FENCE, 'run with fence 5 after 10');
      const staleCreate = await probe.create(id, 4, 2);
      expectError(
        staleCreate,
        409,
        ContractErrorCode.STALE_FENCE,
        'create (attempt 2) with fence 4 after 10',
      );
      // A repeated create of the same attempt by a newer holder answers idempotently, but the
      // worker must remember its fence: the holder it replaced is refused from then on.
      await probe.ok(probe.create(id, 12), 'repeated create (attempt 1) with fence 12');
      const replaced = await probe.write(id, 'running', 11);
      expectError(
        replaced,
        409,
        ContractErrorCode.STALE_FENCE,
        'run with fence 11 after a repeated create with fence 12',
      );
      const after = await probe.ok(probe.read(id, 'status'), 'status');
      expectStatus(after, TaskStatus.CREATE, 'status after stale calls');
      const missing = await probe.send({
        method: 'PUT',
        path: probe.path,
        query: { task_id: id, action: 'running' },
        body: {},
        fence: null,
      });
      expectError(missing, 400, undefined, 'run without X-Baton-Fence');
      const after2 = await probe.ok(probe.read(id, 'status'), 'status');
      expectStatus(after2, TaskStatus.CREATE, 'status after a call without fence');
      return 'stale fence 409 (also after an idempotent create), missing fence 400, status unchanged';
    },
  },
  {
    name: 'retry: a higher attempt re-creates a failed task',
    section: 'Idempotency and attempts',
    run: async ({ probe }) => {
      const id = probe.taskId('retry');
      await probe.ok(probe.create(id, 1), 'create');
      await probe.ok(probe.write(id, undefined, 1, { event: 'cancel' }), 'notify cancel');
      const again = await probe.ok(probe.create(id, 2, 2), 'create attempt 2');
      expectStatus(again, TaskStatus.CREATE, 'create attempt 2');
      expect(again.attempt === 2, `attempt is ${String(again.attempt)} after a retry, expected 2`);
      return 'FAIL -> CREATE with attempt 2';
    },
  },
  {
    name: 're-run: a higher attempt re-creates a finished task',
    section: 'Idempotency and attempts',
    run: async ({ probe }) => {
      const id = probe.taskId('rerun');
      await probe.ok(probe.create(id, 1), 'create');
      await probe.ok(probe.write(id, undefined, 1, { event: 'cancel' }), 'notify cancel');
      const finished = await probe.optional(probe.write(id, 'clean', 1), 'clean');
      expectStatus(finished, TaskStatus.FINISH, 'clean');
      const again = await probe.ok(probe.create(id, 2, 2), 'create attempt 2 of a finished task');
      expectStatus(again, TaskStatus.CREATE, 'create attempt 2 of a finished task');
      expect(again.attempt === 2, `attempt is ${String(again.attempt)} after a re-run, expected 2`);
      return 'FINISH -> CREATE with attempt 2';
    },
  },
  {
    name: 're-sent create: the same attempt answers what is there; a newer one replaces an attempt that never ran',
    section: 'Idempotency and attempts',
    run: async ({ probe }) => {
      const id = probe.taskId('resent');
      await probe.ok(probe.create(id, 3), 'create (attempt 1)');
      // A scheduler that crashed after sending, or whose answer was lost, sends the same again.
      const again = await probe.ok(probe.create(id, 3), 're-sent create (attempt 1, same fence)');
      expectStatus(again, TaskStatus.CREATE, 're-sent create');
      expect(
        again.attempt === 1,
        `attempt is ${String(again.attempt)} after a re-send, expected 1`,
      );
      // The scheduler moved the task on (a new claim, a new attempt) before it ever ran here.
      const moved = await probe.ok(probe.create(id, 4, 2), 'create (attempt 2) over attempt 1');
      expectStatus(moved, TaskStatus.CREATE, 'create of attempt 2 over an attempt that never ran');
      expect(moved.attempt === 2, `attempt is ${String(moved.attempt)}, expected 2`);
      const now = await probe.ok(probe.read(id, 'status'), 'status');
      expect(now.attempt === 2, `status says attempt ${String(now.attempt)}, expected 2`);
      return 'same attempt answered again; attempt 2 replaced attempt 1 in CREATE';
    },
  },
  {
    name: 'create_run: create and run in one call (optional)',
    section: 'Calls',
    run: async ({ probe }) => {
      const id = probe.taskId('createrun');
      const send = (): Promise<RawAnswer> =>
        probe.send({
          method: 'POST',
          path: probe.path,
          query: { action: 'running' },
          body: probe.createBody(id, 1),
          fence: 1,
        });
      const first = await send();
      const env = first.json as { code?: number; data?: Data; message?: string };
      // Not offered (an async type, a type with a prepare step, or a worker without the call).
      if (first.status === 400 || first.status === 501)
        throw new NotApplicable(
          `not offered for this type (${first.status}: ${env.message ?? ''})`,
        );
      const data = await probe.ok(Promise.resolve(first), 'create_run');
      const status = String(data.task_status);
      if (status === TaskStatus.CREATE || status === TaskStatus.RUNNING)
        throw new NotApplicable(`not offered: the create was answered with ${status}`);
      expect(OUTCOMES.has(status), `create_run answered ${status}, expected SUCCESS or FAIL`);
      // A repeat of the same attempt answers what is there (no second run), as status does.
      const again = await probe.ok(send(), 'create_run repeated');
      expectStatus(again, status as TaskStatus, 'create_run repeated');
      const now = await probe.ok(probe.read(id, 'status'), 'status');
      expectStatus(now, status as TaskStatus, 'status after create_run');
      return `answered ${status}; a repeat answered it again`;
    },
  },
  {
    name: 'create_run: the run begins on a start_time a moment ahead (optional)',
    section: 'Calls',
    run: async ({ probe }) => {
      const id = probe.taskId('createrun-at');
      const body = probe.createBody(id, 1);
      const at = probe.clock.now() + START_AHEAD_MS;
      const answer = await probe.send({
        method: 'POST',
        path: probe.path,
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
      const data = await probe.ok(Promise.resolve(answer), 'create_run');
      const status = String(data.task_status);
      if (!OUTCOMES.has(status)) throw new NotApplicable(`not offered: answered ${status}`);
      // The run cannot have ended before it began (with some room for the two hosts' clocks).
      const early = at - probe.clock.now();
      expect(
        early <= CLOCK_ROOM_MS,
        `create_run answered ${early} ms before its start_time: the run did not wait for it`,
      );
      return `answered ${status} after start_time`;
    },
  },
];
