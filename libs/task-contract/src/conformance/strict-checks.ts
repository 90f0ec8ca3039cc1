import { ContractErrorCode } from '../errors/contract.exception';
import { TaskStatus } from '../enums/task-status.enum';
import { Check } from './conformance-check';
import { NotApplicable, expect, expectError, expectStatus } from './expectations';

const DEFAULT_MAX_BODY = 1_048_576;

/**
 * What a worker refuses before it looks at a task, and in which order: media type, size, the
 * fence header, task ids held by another type, and which refusal wins when several apply.
 */
export const STRICT_CHECKS: readonly Check[] = [
  {
    name: 'body: a body that is not application/json is refused with 415',
    section: 'Calls',
    run: async ({ probe }) => {
      const id = probe.taskId('media');
      const create = await probe.send({
        method: 'POST',
        path: probe.path,
        rawBody: JSON.stringify(probe.createBody(id, 1)),
        contentType: 'text/plain',
        fence: 1,
      });
      expectError(create, 415, ContractErrorCode.UNSUPPORTED_MEDIA_TYPE, 'create as text/plain');
      await probe.expectUnknown(id);
      return 'create as text/plain: 415 (41500), nothing created';
    },
  },
  {
    name: 'body: a body over the limit is refused with 413',
    section: 'Calls',
    run: async ({ probe }) => {
      const limit = probe.options.maxBodyBytes ?? DEFAULT_MAX_BODY;
      const id = probe.taskId('large');
      const body = probe.createBody(id, 1);
      const rawBody = JSON.stringify({ ...body, params: { pad: 'x'.repeat(limit) } });
      // A worker may answer 413 and close before the body is all sent (HTTP allows it): the
      // write then fails before the answer is read (EPIPE, a reset), seen on a loaded box. The
      // answer is asked for again, a few times, before that counts against the worker.
      const send = () => probe.send({ method: 'POST', path: probe.path, rawBody, fence: 1 });
      let answer: Awaited<ReturnType<typeof send>> | undefined;
      for (let tries = 1; !answer; tries++) {
        answer = await send().catch((err: unknown) => {
          const cut = /EPIPE|ECONNRESET|other side closed|socket hang up/i.test(String(err));
          if (!cut || tries >= 3) throw err;
          return undefined;
        });
      }
      expectError(
        answer,
        413,
        ContractErrorCode.PAYLOAD_TOO_LARGE,
        `a body of ${rawBody.length} bytes`,
      );
      await probe.expectUnknown(id);
      return `${rawBody.length} bytes: 413 (41300), nothing created`;
    },
  },
  {
    name: 'fence: create and notify without X-Baton-Fence are refused with 400 (40002)',
    section: 'Headers the scheduler sends',
    run: async ({ probe }) => {
      const id = probe.taskId('nofence');
      const create = await probe.send({
        method: 'POST',
        path: probe.path,
        body: probe.createBody(id, 1),
        fence: null,
      });
      expectError(create, 400, ContractErrorCode.MISSING_FENCE, 'create without X-Baton-Fence');
      await probe.expectUnknown(id);
      await probe.ok(probe.create(id, 1), 'create');
      const notify = await probe.send({
        method: 'PUT',
        path: probe.path,
        query: { task_id: id },
        body: { event: 'cancel' },
        fence: null,
      });
      expectError(
        notify,
        400,
        ContractErrorCode.MISSING_FENCE,
        'notify cancel without X-Baton-Fence',
      );
      expectStatus(await probe.ok(probe.read(id, 'status'), 'status'), TaskStatus.CREATE, 'status');
      return 'both 40002; nothing created or cancelled';
    },
  },
  {
    name: 'task id of another type: 409 on create, unknown to every other call',
    section: 'Calls',
    run: async ({ probe }) => {
      const other = probe.options.otherType;
      if (!other) throw new NotApplicable('needs --other-type (another type the worker serves)');
      const id = probe.taskId('othertype');
      await probe.ok(probe.create(id, 1), 'create');
      const otherPath = probe.pathOf(other);
      const create = await probe.send({
        method: 'POST',
        path: otherPath,
        body: probe.createBody(id, 1, other, {}),
        fence: 2,
      });
      expectError(
        create,
        409,
        ContractErrorCode.CREATE_CONFLICT,
        `create of the id under ${other}`,
      );
      const status = await probe.ok(
        probe.send({ method: 'GET', path: otherPath, query: { task_id: id, action: 'status' } }),
        `status under ${other}`,
      );
      expectStatus(status, TaskStatus.NONE, `status under ${other}`);
      const run = await probe.send({
        method: 'PUT',
        path: otherPath,
        query: { task_id: id, action: 'running' },
        body: {},
        fence: 2,
      });
      expectError(run, 404, ContractErrorCode.TASK_NOT_FOUND, `run under ${other}`);
      const items = await probe.ok(
        probe.send({ method: 'GET', path: otherPath, query: { task_id: id } }),
        `query under ${other}`,
      );
      expect(
        Array.isArray(items.items) && items.items.length === 0,
        `query under ${other} found the task`,
      );
      const mine = await probe.ok(probe.read(id, 'status'), 'status');
      expectStatus(mine, TaskStatus.CREATE, 'status under its own type');
      expect(
        mine.attempt === 1,
        `attempt is ${String(mine.attempt)} after the refusals, expected 1`,
      );
      return `create 40902, status NONE, run 40401, query empty under ${other}; unchanged`;
    },
  },
  {
    name: 'order of checks: the first broken rule in the contract’s order answers',
    section: 'Order of checks',
    run: async ({ probe }) => {
      // Authentication before the task type: an unauthenticated caller learns nothing of types.
      const unknownType = await probe.send({
        method: 'GET',
        path: probe.pathOf(`conformance-unknown-${probe.runId}`),
        query: { task_id: probe.taskId('order'), action: 'status' },
        auth: 'none',
      });
      expectError(unknownType, 401, undefined, 'no credentials and an unknown type');
      // The fence header before the task.
      const noFence = await probe.send({
        method: 'PUT',
        path: probe.path,
        query: { task_id: probe.taskId('order-unknown'), action: 'running' },
        body: {},
        fence: null,
      });
      expectError(noFence, 400, ContractErrorCode.MISSING_FENCE, 'no fence and an unknown task');
      // The body before the fence, the fence before the status.
      const id = probe.taskId('order');
      await probe.ok(probe.create(id, 10), 'create with fence 10');
      const badBody = await probe.write(id, 'pause', 5, { surprise: true });
      expectError(badBody, 400, undefined, 'an unknown body field and a stale fence');
      const stale = await probe.write(id, 'continue', 5);
      expectError(
        stale,
        409,
        ContractErrorCode.STALE_FENCE,
        'a stale fence and an illegal transition',
      );
      return '401 before 404, 40002 before 40401, 400 before 40901, 40901 before 40900';
    },
  },
];
