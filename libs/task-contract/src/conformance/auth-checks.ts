import { ContractErrorCode } from '../errors/contract.exception';
import { authHeaders } from '../worker/auth/request-auth';
import { Check } from './conformance-check';
import { NotApplicable, expect, expectError } from './expectations';

/** Requests without, with wrong, replayed, stale or tampered credentials are refused with 401. */
export const AUTH_CHECKS: readonly Check[] = [
  {
    name: 'auth: missing credentials refused with 401',
    run: async ({ probe, main }) => {
      const answer = await probe.send({
        method: 'GET',
        path: probe.path,
        query: { task_id: main, action: 'status' },
        auth: 'none',
      });
      expectError(answer, 401, undefined, 'status without credentials');
      const create = await probe.send({
        method: 'POST',
        path: probe.path,
        body: probe.createBody(probe.taskId('noauth'), 1),
        fence: 1,
        auth: 'none',
      });
      expectError(create, 401, undefined, 'create without credentials');
      return '401';
    },
  },
  {
    name: 'auth: wrong credentials refused with 401',
    run: async ({ probe, main }) => {
      const answer = await probe.send({
        method: 'GET',
        path: probe.path,
        query: { task_id: main, action: 'status' },
        auth: 'wrong',
      });
      expectError(answer, 401, undefined, 'status with wrong credentials');
      return '401';
    },
  },
  {
    name: 'auth: a replayed signature is refused with 401',
    run: async ({ probe }) => {
      if (probe.options.auth.mode !== 'hmac')
        throw new NotApplicable('needs --secret (HMAC); a bearer token has no signature to replay');
      const id = probe.taskId('replay');
      const first = await probe.send({
        method: 'POST',
        path: probe.path,
        body: probe.createBody(id, 1),
        fence: 1,
      });
      expect(first.status === 200, `signed create answered ${first.status}`);
      const replay = await probe.send({
        method: 'POST',
        path: probe.path,
        body: probe.createBody(id, 1),
        headers: first.sent,
      });
      expectError(
        replay,
        401,
        ContractErrorCode.SIGNATURE_REPLAYED,
        'the same signed request sent twice',
      );
      return '401 / 40103';
    },
  },
  {
    name: 'auth: a stale timestamp is refused with 401',
    run: async ({ probe, main }) => {
      if (probe.options.auth.mode !== 'hmac') throw new NotApplicable('needs --secret (HMAC)');
      const base = new URL(probe.options.url);
      const pathWithQuery = `${base.pathname.replace(/\/+$/, '')}${probe.path}?task_id=${main}&action=status`;
      const headers = authHeaders(
        probe.options.auth,
        { method: 'GET', pathWithQuery, body: '' },
        probe.clock.now() - 3_600_000,
      );
      const answer = await probe.send({
        method: 'GET',
        path: probe.path,
        query: { task_id: main, action: 'status' },
        headers,
      });
      expectError(answer, 401, undefined, 'a signature an hour old');
      return '401';
    },
  },
  {
    name: 'auth: the signature covers X-Baton-Fence',
    run: async ({ probe, main }) => {
      if (probe.options.auth.mode !== 'hmac') throw new NotApplicable('needs --secret (HMAC)');
      const base = new URL(probe.options.url);
      const query = { task_id: main, action: 'status' };
      const pathWithQuery = `${base.pathname.replace(/\/+$/, '')}${probe.path}?${new URLSearchParams(query).toString()}`;
      const headers = {
        ...authHeaders(
          probe.options.auth,
          { method: 'GET', pathWithQuery, fence: '1', body: '' },
          probe.clock.now(),
        ),
        'x-baton-fence': '999999',
      };
      const answer = await probe.send({ method: 'GET', path: probe.path, query, headers });
      expectError(answer, 401, undefined, 'a fence changed after signing');
      return '401';
    },
  },
];
