import { ManualClock } from '@baton/time';
import { ContractErrorCode, ContractException } from '../../errors/contract.exception';
import { AuthRequest, RequestVerifier, authHeaders, signRequest } from './request-auth';

const SECRET = 'a-secret-of-enough-length';
const TOKEN = 'a-token-of-enough-length';

function codeOf(fn: () => void): ContractErrorCode | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (err instanceof ContractException) return err.code;
    throw err;
  }
}

function signed(
  now: number,
  body = '{"a":1}',
  path = '/v1/task/x?task_id=1&action=running',
): AuthRequest {
  return {
    method: 'PUT',
    pathWithQuery: path,
    rawBody: body,
    headers: {
      'x-baton-fence': '7',
      ...authHeaders(
        { mode: 'hmac', secret: SECRET },
        { method: 'PUT', pathWithQuery: path, fence: '7', body },
        now,
      ),
    },
  };
}

describe('RequestVerifier, token', () => {
  const verifier = new RequestVerifier({ mode: 'token', token: TOKEN });
  const req = (authorization?: string): AuthRequest => ({
    method: 'GET',
    pathWithQuery: '/',
    rawBody: '',
    headers: { authorization },
  });

  it('accepts the right bearer token', () => {
    expect(codeOf(() => verifier.verify(req(`Bearer ${TOKEN}`)))).toBeUndefined();
  });
  it.each([undefined, '', TOKEN, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, `Basic ${TOKEN}`])(
    'refuses %j',
    (value) => {
      expect(codeOf(() => verifier.verify(req(value)))).toBe(ContractErrorCode.UNAUTHENTICATED);
    },
  );
});

describe('RequestVerifier, HMAC', () => {
  const now = 1_800_000_000_000;
  const make = () =>
    new RequestVerifier(
      { mode: 'hmac', secret: SECRET, replayWindowMs: 60_000 },
      new ManualClock(now),
    );

  it('accepts a fresh signature once and refuses its replay', () => {
    const verifier = make();
    const req = signed(now - 1000);
    expect(codeOf(() => verifier.verify(req))).toBeUndefined();
    expect(codeOf(() => verifier.verify(req))).toBe(ContractErrorCode.SIGNATURE_REPLAYED);
  });

  it('refuses missing headers', () => {
    expect(
      codeOf(() => make().verify({ method: 'GET', pathWithQuery: '/', rawBody: '', headers: {} })),
    ).toBe(ContractErrorCode.UNAUTHENTICATED);
  });

  it('refuses a signature made with another secret', () => {
    const path = '/v1/task/x?task_id=1';
    const headers = authHeaders(
      { mode: 'hmac', secret: `${SECRET}!` },
      { method: 'GET', pathWithQuery: path, body: '' },
      now,
    );
    expect(
      codeOf(() => make().verify({ method: 'GET', pathWithQuery: path, rawBody: '', headers })),
    ).toBe(ContractErrorCode.BAD_SIGNATURE);
  });

  it.each([
    ['body', (r: AuthRequest) => ({ ...r, rawBody: '{"a":2}' })],
    [
      'query',
      (r: AuthRequest) => ({ ...r, pathWithQuery: r.pathWithQuery.replace('running', 'rollback') }),
    ],
    ['method', (r: AuthRequest) => ({ ...r, method: 'POST' })],
    [
      'timestamp',
      (r: AuthRequest) => ({
        ...r,
        headers: { ...r.headers, 'x-baton-timestamp': String(now - 5) },
      }),
    ],
  ])('refuses a request whose %s changed after signing', (_what, tamper) => {
    expect(codeOf(() => make().verify(tamper(signed(now - 10))))).toBe(
      ContractErrorCode.BAD_SIGNATURE,
    );
  });

  it.each([now - 60_001, now + 60_001, 0])('refuses timestamp %d outside the window', (ts) => {
    expect(codeOf(() => make().verify(signed(ts)))).toBe(ContractErrorCode.SIGNATURE_EXPIRED);
  });

  it('signs method, path with query, timestamp, nonce, fence and the body hash', () => {
    const parts = { method: 'PUT', pathWithQuery: '/p?x=1', fence: '3', body: 'body' };
    const a = signRequest(SECRET, parts, '1', 'n');
    expect(a).toMatch(/^v1=[0-9a-f]{64}$/);
    expect(signRequest(SECRET, { ...parts, method: 'put' }, '1', 'n')).toBe(a);
    expect(signRequest(SECRET, { ...parts, pathWithQuery: '/p?x=2' }, '1', 'n')).not.toBe(a);
    expect(signRequest(SECRET, parts, '2', 'n')).not.toBe(a);
    expect(signRequest(SECRET, parts, '1', 'm')).not.toBe(a);
    expect(signRequest(SECRET, { ...parts, fence: '4' }, '1', 'n')).not.toBe(a);
    expect(signRequest(SECRET, { ...parts, fence: undefined }, '1', 'n')).not.toBe(a);
    expect(signRequest(SECRET, { ...parts, body: 'body ' }, '1', 'n')).not.toBe(a);
  });

  it('accepts two identical calls signed in the same millisecond: the nonce tells them apart', () => {
    const verifier = make();
    expect(codeOf(() => verifier.verify(signed(now)))).toBeUndefined();
    expect(codeOf(() => verifier.verify(signed(now)))).toBeUndefined();
  });

  it.each([undefined, 'short', 'has spaces in it!!!!!'])('refuses nonce %j', (nonce) => {
    const req = signed(now);
    expect(
      codeOf(() => make().verify({ ...req, headers: { ...req.headers, 'x-baton-nonce': nonce } })),
    ).toBe(ContractErrorCode.UNAUTHENTICATED);
  });
});

describe('RequestVerifier, none', () => {
  it('lets everything through, by explicit choice only', () => {
    expect(
      codeOf(() =>
        new RequestVerifier({ mode: 'none' }).verify({
          method: 'GET',
          pathWithQuery: '/',
          rawBody: '',
          headers: {},
        }),
      ),
    ).toBeUndefined();
  });
});
