import { ContractErrorCode } from '../errors/contract.exception';
import { Check } from './conformance-check';
import { Data, expectError } from './expectations';

/** Bad bodies (400, nothing created), an unknown task type and an unknown task (404). */
export const BODY_CHECKS: readonly Check[] = [
  {
    name: 'body: invalid JSON refused with 400',
    run: async ({ probe }) => {
      const id = probe.taskId('badjson');
      const answer = await probe.send({
        method: 'POST',
        path: probe.path,
        rawBody: `{"task_id":"${id}",`,
        fence: 1,
      });
      expectError(answer, 400, undefined, 'invalid JSON');
      await probe.expectUnknown(id);
      return '400, nothing created';
    },
  },
  {
    name: 'body: unknown field refused with 400',
    run: async ({ probe }) => {
      const id = probe.taskId('unknownfield');
      const answer = await probe.send({
        method: 'POST',
        path: probe.path,
        body: { ...probe.createBody(id, 1), surprise: true },
        fence: 1,
      });
      expectError(answer, 400, undefined, 'create with an unknown top-level field');
      const nested = probe.createBody(id, 1);
      (nested.create_info as Data).surprise = 1;
      const answer2 = await probe.send({
        method: 'POST',
        path: probe.path,
        body: nested,
        fence: 1,
      });
      expectError(answer2, 400, undefined, 'create with an unknown field in create_info');
      await probe.expectUnknown(id);
      return '400, nothing created';
    },
  },
  {
    name: 'body: missing or mistyped field refused with 400',
    run: async ({ probe }) => {
      const id = probe.taskId('missing');
      const body = probe.createBody(id, 1);
      delete body.create_info;
      expectError(
        await probe.send({ method: 'POST', path: probe.path, body, fence: 1 }),
        400,
        undefined,
        'create without create_info',
      );
      const typed = probe.createBody(id, 1);
      (typed.create_info as Data).important_level = 'high';
      expectError(
        await probe.send({ method: 'POST', path: probe.path, body: typed, fence: 1 }),
        400,
        undefined,
        'important_level "high"',
      );
      const mismatch = probe.createBody(id, 1);
      (mismatch.create_info as Data).task_type = `${probe.options.type}.other`;
      expectError(
        await probe.send({ method: 'POST', path: probe.path, body: mismatch, fence: 1 }),
        400,
        undefined,
        'create_info.task_type differs from the path',
      );
      await probe.expectUnknown(id);
      return '400 x3, nothing created';
    },
  },
  {
    name: 'unknown task type: 404',
    run: async ({ probe, main }) => {
      const other = `/v1/task/${encodeURIComponent(`${probe.options.type}-unknown-${probe.runId}`)}`;
      const create = await probe.send({
        method: 'POST',
        path: other,
        body: probe.createBody(
          probe.taskId('type'),
          1,
          `${probe.options.type}-unknown-${probe.runId}`,
        ),
        fence: 1,
      });
      expectError(create, 404, ContractErrorCode.TASK_TYPE_NOT_FOUND, 'create of an unknown type');
      const status = await probe.send({
        method: 'GET',
        path: other,
        query: { task_id: main, action: 'status' },
      });
      expectError(status, 404, ContractErrorCode.TASK_TYPE_NOT_FOUND, 'status of an unknown type');
      return '404 / 40400';
    },
  },
  {
    name: 'unknown task: 404 on a changing call',
    run: async ({ probe }) => {
      const answer = await probe.write(probe.taskId('ghost'), 'running', 1);
      expectError(answer, 404, ContractErrorCode.TASK_NOT_FOUND, 'run of an unknown task');
      return '404 / 40401';
    },
  },
];
