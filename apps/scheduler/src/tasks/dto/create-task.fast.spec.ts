import { ValidationPipe } from '@nestjs/common';
import { CreateTaskBatchDto, CreateTaskDto } from './create-task.dto';
import { fastCreateTask, fastCreateTaskBatch } from './create-task.fast';
import { disagreements, schemaBodies } from '../../../../../libs/task-contract/test/schema-bodies';

/** The global pipe's verdict (the options bootstrap gives it), without the fast checks. */
const pipe = new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true });
async function reference<T>(metatype: new () => T, body: unknown): Promise<T | undefined> {
  try {
    return (await pipe.transform(body, { type: 'body', metatype })) as T;
  } catch {
    return undefined;
  }
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
const ABSENT = Symbol('absent');
const FIELDS: Record<string, readonly unknown[]> = {
  create_info: [
    { task_type: 'demo.echo', task_name: 'n' },
    { task_type: 'demo.echo', task_name: 'n', important_level: 9, http_url: 'http://w:1' },
    { task_type: 'Demo', task_name: 'n' },
    { task_type: 'demo.echo', task_name: '' },
    { task_type: 'demo.echo' },
    null,
    [],
  ],
  process_arg: [
    ABSENT,
    { max_retry: 2, task_status: 'postpone' },
    { start_time: '2026-11-25T06:00:00Z' },
    { max_retry: 101 },
    { task_status: 'RUNNING' },
    { x: 1 },
    null,
  ],
  repetition: [ABSENT, 'simple', 'permanent', 'timed', 3, null],
  params: [
    ABSENT,
    {},
    { a: [1, { b: 2 }] },
    { prototype: 1 },
    { a: { constructor: 2 } },
    [],
    'x',
    null,
  ],
  lock_keys: [
    ABSENT,
    [],
    ['db:1', 'a/b.c_d-e'],
    ['bad key'],
    ['a'.repeat(200)],
    ['a'.repeat(201)],
    Array.from({ length: 33 }, (_, i) => `k${i}`),
    'k',
    [1],
    null,
  ],
  idempotency_key: [ABSENT, 'key-1', '~!{}', 'has space', 'a'.repeat(201), '', 1, null],
  tenant: [ABSENT, 'default', 'team-b_2', 'Team', '-x', 'a'.repeat(101), 1, null],
  labels: [ABSENT, { env: 'prod' }, { valueOf: 'v' }, [], 'x', null],
  callback_url: [
    ABSENT,
    'http://127.0.0.1:9/cb',
    'https://hooks.example/x',
    'ftp://x',
    'nope',
    3,
    null,
  ],
  surprise: [ABSENT, 1],
};

function body(r: () => number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, values] of Object.entries(FIELDS)) {
    const v = r() < 0.8 ? values[0] : values[Math.floor(r() * values.length)];
    if (v !== ABSENT) out[key] = v;
  }
  return out;
}

describe('create bodies: fast checks against the ValidationPipe', () => {
  it('accept only what the pipe accepts and make the same instance (4,000 generated tasks)', async () => {
    const r = rng(42);
    let accepted = 0;
    let pipeAccepted = 0;
    for (let i = 0; i < 4000; i++) {
      const b = body(r);
      const fast = fastCreateTask(b);
      const ref = await reference(CreateTaskDto, b);
      if (ref) pipeAccepted++;
      if (!fast) continue;
      accepted++;
      if (!ref) throw new Error(`accepted what the pipe refuses: ${JSON.stringify(b)}`);
      expect(fast).toStrictEqual(ref);
    }
    expect(pipeAccepted).toBeGreaterThan(500);
    // Most of those too (the rest are bodies class-transformer copies differently: left to the pipe).
    expect(accepted / pipeAccepted).toBeGreaterThan(0.7);
  });

  it('batches: all valid is proven, one bad task leaves the batch to the pipe', async () => {
    const r = rng(7);
    const good = Array.from({ length: 500 }, () => ({
      create_info: { task_type: 'demo.echo', task_name: `t${r()}` },
      params: { i: r() },
    }));
    const fast = fastCreateTaskBatch({ tasks: good });
    expect(fast).toBeDefined();
    expect(fast).toStrictEqual(await reference(CreateTaskBatchDto, { tasks: good }));
    for (const bad of [
      { tasks: [...good, good[0]] },
      { tasks: [] },
      { tasks: [good[0], { create_info: null }] },
      { tasks: good.slice(0, 2), more: 1 },
      { tasks: 'x' },
    ]) {
      expect(fastCreateTaskBatch(bad as Record<string, unknown>)).toBeUndefined();
      expect(await reference(CreateTaskBatchDto, bad)).toBeUndefined();
    }
  });

  // A create with every field set, each to a valid value.
  const FULL = {
    create_info: { task_type: 'mysql.backup', task_name: 'nightly', important_level: 3 },
    process_arg: { deadline_second: 600, max_retry: 2, task_status: 'PAUSE' },
    repetition: 'permanent',
    params: { cluster: 'c42', sizes: [1, 2] },
    lock_keys: ['mysql-cluster-42'],
    idempotency_key: 'nightly-2026-11-27',
    tenant: 'dba',
    labels: { team: 'dba' },
    callback_url: 'https://hooks.example.com/baton',
  };

  it('accept and refuse the same bodies as class-validator, made from the DTOs (every field, its limits, each JSON type)', () => {
    const one = schemaBodies(CreateTaskDto, FULL);
    expect(one.length).toBeGreaterThan(300);
    expect(disagreements(CreateTaskDto, fastCreateTask, one)).toEqual([]);
    const batch = schemaBodies(CreateTaskBatchDto, { tasks: [FULL, FULL] });
    expect(disagreements(CreateTaskBatchDto, fastCreateTaskBatch, batch)).toEqual([]);
    expect(one.filter((b) => fastCreateTask(b.body)).length).toBeGreaterThan(50);
  });
});
