import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { validateDto } from '../util/validate';
import { fastActionRequest, fastCreateTaskRequest } from './fast-validators';
import { ActionRequestDto, CreateTaskRequestDto } from './worker-requests.dto';

type Ctor<T> = new () => T;

/** The class-validator path alone, as validateDto ran it before the fast checks. */
function slow<T extends object>(cls: Ctor<T>, body: unknown): T | undefined {
  let instance: T;
  try {
    instance = plainToInstance(cls, body);
  } catch {
    return undefined; // class-transformer trips over some keys (a string "constructor")
  }
  const errors = validateSync(instance, { whitelist: true, forbidNonWhitelisted: true });
  return errors.length === 0 ? instance : undefined;
}

/** A small deterministic generator, so a failure names a body that can be run again. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const ABSENT = Symbol('absent');

/** Candidate values per field: valid ones, near misses, wrong types, null, and edge strings. */
const STRINGS = [
  '',
  'x',
  'a'.repeat(64),
  'a'.repeat(65),
  'a'.repeat(200),
  'a'.repeat(201),
  '\uFE0F',
  '😀',
  'é',
];
const FIELDS = {
  task_id: [
    '01JD2Z6W8ZK3Y4N5P6Q7R8S9T0',
    'a_b-C',
    'a'.repeat(64),
    'a'.repeat(65),
    '',
    'a b',
    'ü',
    7,
    null,
  ],
  attempt: [ABSENT, 1, 2, 10000, 10001, 0, -1, 1.5, '1', null, true],
  params: [
    ABSENT,
    {},
    { cluster: 42, nested: { a: [1, { b: 'c' }] } },
    { prototype: 1 },
    { nested: [{ valueOf: 2 }] },
    { constructor: 'x' },
    { toString: 'y' },
    [],
    'x',
    3,
    null,
  ],
  lock_keys: [
    ABSENT,
    [],
    ['db:1', 'db:2'],
    ['a'.repeat(200)],
    ['a'.repeat(201)],
    [1],
    'db:1',
    [null],
    null,
  ],
  extra: [ABSENT, 'surprise'],
} as const;
const INFO = {
  task_type: [
    'demo.echo',
    'a',
    'mysql.fail-over_2',
    'Demo.echo',
    '.x',
    'a'.repeat(100),
    'a'.repeat(101),
    5,
    null,
  ],
  task_name: ['nightly backup', ...STRINGS, 3, null],
  important_level: [ABSENT, 0, 5, 9, 10, -1, 2.5, '5', null],
  http_url: [
    ABSENT,
    'http://127.0.0.1:3100',
    'https://worker.internal/base',
    'ftp://x',
    'worker:3100',
    'http://' + 'a'.repeat(500),
    3,
    null,
  ],
  parent_task_id: [ABSENT, ...STRINGS, 1, null],
  control_task_id: [ABSENT, 'c1', 'a'.repeat(65), null],
  extra: [ABSENT, 1],
} as const;
const ARG = {
  start_time: [
    ABSENT,
    '2026-11-25T06:00:00.000Z',
    '2026-11-25T06:00:00Z',
    '2026-11-25',
    '2026-02-30T00:00:00Z',
    'soon',
    1764050400000,
    null,
  ],
  deadline_second: [ABSENT, 1, 604800, 604801, 0, '60', null],
  lock_timeout: [ABSENT, 1, 86400, 86401, 0.5, null],
  max_retry: [ABSENT, 0, 100, 101, -1, null],
  task_status: [
    ABSENT,
    'INIT',
    'POSTPONE',
    'PAUSE',
    'Postpose',
    ' pause ',
    'postpone',
    'RUNNING',
    'SUCCESS',
    'nope',
    3,
    null,
  ],
  extra: [ABSENT, true],
} as const;

/** Every field at its first (valid) value except, now and then, one at another candidate. */
function build(
  r: () => number,
  fields: Record<string, readonly unknown[]>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, values] of Object.entries(fields)) {
    const v = r() < 0.9 ? values[0] : pick(r, values);
    if (v !== ABSENT) out[key] = v;
  }
  return out;
}

/** Optional fields present with valid values, so mutations reach them. */
const FULL_INFO = {
  ...INFO,
  important_level: [5, ...INFO.important_level],
  http_url: ['http://w:1', ...INFO.http_url],
};

function createBody(r: () => number): Record<string, unknown> {
  const body = build(r, FIELDS);
  body.create_info = r() < 0.97 ? build(r, r() < 0.5 ? INFO : FULL_INFO) : pick(r, [null, [], 'x']);
  const a = r();
  if (a < 0.6) body.process_arg = build(r, ARG);
  else if (a < 0.63) body.process_arg = pick(r, [null, [], 'x', 3]);
  return body;
}

describe('fast validators', () => {
  it('accept only what class-validator accepts, and make the same instance (10,000 generated create bodies)', () => {
    const r = rng(20261125);
    let accepted = 0;
    let slowAccepted = 0;
    for (let i = 0; i < 10_000; i++) {
      const body = createBody(r);
      const fast = fastCreateTaskRequest(body);
      const reference = slow(CreateTaskRequestDto, body);
      if (reference) slowAccepted++;
      if (fast) {
        accepted++;
        if (!reference)
          throw new Error(
            `fast path accepted a body class-validator refuses: ${JSON.stringify(body)}`,
          );
        expect(fast).toStrictEqual(reference);
        expect(fast.create_info).toBeInstanceOf(reference.create_info.constructor);
      }
    }
    // The generator reaches both verdicts often enough to mean something.
    expect(slowAccepted).toBeGreaterThan(1000);
    // And the fast checks prove most of those (null optionals are left to class-validator).
    expect(accepted / slowAccepted).toBeGreaterThan(0.8);
  });

  it('prove valid every create body the scheduler sends (so the hot call never pays reflection)', () => {
    const bodies = [
      {
        task_id: '01JD2Z6W8ZK3Y4N5P6Q7R8S9T0',
        attempt: 1,
        create_info: { task_type: 'demo.echo', task_name: 'echo 1' },
        params: { message: 'hi' },
        lock_keys: [],
      },
      {
        task_id: '01JD2Z6W8ZK3Y4N5P6Q7R8S9T1',
        attempt: 3,
        create_info: {
          task_type: 'mysql.failover',
          task_name: 'failover',
          important_level: 9,
          http_url: 'http://127.0.0.1:3100',
          parent_task_id: 'p1',
          control_task_id: 'c1',
        },
        process_arg: {
          start_time: '2026-11-25T06:00:00.000Z',
          deadline_second: 60,
          lock_timeout: 30,
          max_retry: 2,
          task_status: 'INIT',
        },
        params: { cluster: 42 },
        lock_keys: ['mysql:42'],
      },
    ];
    for (const body of bodies) {
      const fast = fastCreateTaskRequest(body);
      expect(fast).toBeDefined();
      expect(fast).toStrictEqual(slow(CreateTaskRequestDto, body));
    }
  });

  it('action bodies: the same verdicts and instances', () => {
    const bodies: Record<string, unknown>[] = [
      {},
      { reason: 'why' },
      { reason: 'a'.repeat(500) },
      { reason: 'a'.repeat(501) },
      { reason: 3 },
      { reason: null },
      { other: 1 },
    ];
    for (const body of bodies) {
      const fast = fastActionRequest(body);
      const reference = slow(ActionRequestDto, body);
      if (fast) expect(fast).toStrictEqual(reference);
      else if (
        body.reason !== null &&
        !('other' in body) &&
        typeof body.reason !== 'number' &&
        String(body.reason ?? '').length <= 500
      )
        throw new Error(`a valid action body took the slow path: ${JSON.stringify(body)}`);
    }
  });

  it('leaves the refusal and its words to class-validator', () => {
    const body = { task_id: 'a b', create_info: { task_type: 'demo.echo', task_name: '' } };
    expect(fastCreateTaskRequest(body)).toBeUndefined();
    expect(() => validateDto(CreateTaskRequestDto, body)).toThrow(
      /task_id must be 1-64 characters[\s\S]*create_info\.task_name/,
    );
  });

  it('leave params with keys class-transformer drops or trips over to the slow path', () => {
    for (const params of [{ prototype: 1 }, { a: { valueOf: 2 } }, { b: [{ constructor: 'x' }] }]) {
      const body = {
        task_id: 'p1',
        create_info: { task_type: 'demo.echo', task_name: 'n' },
        params,
      };
      expect(fastCreateTaskRequest(body)).toBeUndefined();
    }
  });
});
