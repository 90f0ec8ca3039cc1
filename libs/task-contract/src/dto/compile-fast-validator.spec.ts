import { Expose, Type } from 'class-transformer';
import {
  IsInt,
  IsOptional,
  IsString,
  Validate,
  ValidateNested,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';
import { disagreements, schemaBodies } from '../../test/schema-bodies';
import { getMetadataStorage, isISO8601 } from 'class-validator';
import { NotCompilable, canonicalInstant, compileFastValidator } from './compile-fast-validator';
import { fastActionRequest, fastCreateTaskRequest } from './fast-validators';
import { ActionRequestDto, CreateTaskRequestDto } from './worker-requests.dto';
import {
  AttemptLogBatchesDto,
  CompletionCallbackDto,
  HeartbeatCallbackDto,
  LogBatchDto,
  LogLineDto,
  ProgressCallbackDto,
} from './callback.dto';

/** A create body with every field set, each to a valid value. */
const FULL_CREATE = {
  task_id: 'a_b-C9',
  attempt: 2,
  create_info: {
    task_type: 'mysql.backup',
    task_name: 'nightly',
    important_level: 5,
    http_url: 'http://127.0.0.1:3100',
    parent_task_id: 'p1',
    control_task_id: 'c1',
  },
  process_arg: {
    start_time: '2026-11-27T10:00:00Z',
    deadline_second: 600,
    lock_timeout: 30,
    max_retry: 3,
    task_status: 'Postpose',
  },
  params: { cluster: 42, nested: { a: [1, { b: 'c' }] } },
  lock_keys: ['db:1', 'db:2'],
};

describe('fast checks compiled from the DTOs, against class-validator on bodies made from the schema', () => {
  it('the worker create body: both paths accept and refuse the same bodies and build the same instance', () => {
    const bodies = schemaBodies(CreateTaskRequestDto, FULL_CREATE);
    expect(bodies.length).toBeGreaterThan(300);
    expect(disagreements(CreateTaskRequestDto, fastCreateTaskRequest, bodies)).toEqual([]);
    // Both verdicts occur, and the fast check proves every valid body of these.
    const accepted = bodies.filter((b) => fastCreateTaskRequest(b.body)).length;
    expect(accepted).toBeGreaterThan(50);
    expect(accepted).toBeLessThan(bodies.length - 200);
  });

  it('the action body (reason)', () => {
    const bodies = schemaBodies(ActionRequestDto, { reason: 'operator asked' });
    expect(disagreements(ActionRequestDto, fastActionRequest, bodies)).toEqual([]);
    expect(fastActionRequest({})).toBeInstanceOf(ActionRequestDto);
  });

  it.each([
    [
      'a log batch',
      LogBatchDto,
      {
        attempt: 2,
        lines: [
          { seq: 0, at: '2026-11-28T10:00:00.000Z', level: 'info', message: 'm', fields: { a: 1 } },
          { seq: 1, at: '2026-11-28T10:00:00.001Z', level: 'error', message: '' },
        ],
      },
    ],
    [
      'an outcome report',
      CompletionCallbackDto,
      { attempt: 1, task_status: 'FAIL', result: { a: 1 }, error: { message: 'm', code: 'c' } },
    ],
    [
      'the log batches of many attempts',
      AttemptLogBatchesDto,
      {
        batches: [
          {
            task_id: '01JD2Z6W8ZK3Y4N5P6Q7R8S9T0',
            attempt: 1,
            fence: 3,
            lines: [{ seq: 0, at: '2026-11-28T10:00:00.000Z', level: 'warn', message: 'm' }],
          },
        ],
      },
    ],
    ['a heartbeat', HeartbeatCallbackDto, { attempt: 1 }],
    [
      'a progress report',
      ProgressCallbackDto,
      { attempt: 1, percent: 50, step: 's', message: 'm' },
    ],
  ])('what a worker sends the scheduler: %s', (_what, dto, full) => {
    const fast = compileFastValidator(dto as new () => object);
    const bodies = schemaBodies(dto as new () => object, full);
    expect(disagreements(dto as new () => object, fast, bodies)).toEqual([]);
    expect(fast(full)).toBeInstanceOf(dto);
  });

  it('leaves to class-validator what class-transformer copies differently (keys it trips on)', () => {
    const body = { ...FULL_CREATE, params: { constructor: 'x' } };
    expect(fastCreateTaskRequest(body)).toBeUndefined();
  });
});

@ValidatorConstraint({ name: 'slowly', async: true })
class Slowly implements ValidatorConstraintInterface {
  validate(): Promise<boolean> {
    return Promise.resolve(true);
  }
}

class AsyncDto {
  @Validate(Slowly)
  a!: string;
}

class GroupedDto {
  @IsString({ groups: ['admin'] })
  a!: string;
}

class Inner {
  @IsInt()
  n!: number;
}

class UntypedNested {
  @ValidateNested()
  inner!: Inner;
}

class Empty {}

class Defaulted {
  @IsOptional()
  @IsString()
  a?: string;

  b = 1;
}

class ExposedDto {
  @Expose({ name: 'b' })
  @IsString()
  a!: string;
}

class Typed {
  @ValidateNested()
  @Type(() => Inner)
  inner!: Inner;
}

describe('canonicalInstant (the timestamp shortcut)', () => {
  it('remembers only a time it passed (a batch repeats one), never an absent or empty one', () => {
    expect(canonicalInstant(undefined)).toBe(false);
    expect(canonicalInstant('2026-11-29T11:02:03.004Z')).toBe(true);
    expect(canonicalInstant('2026-11-29T11:02:03.004Z')).toBe(true);
    expect(canonicalInstant('2026-11-29T11:02:03.004')).toBe(false);
    expect(canonicalInstant('')).toBe(false);
    expect(canonicalInstant(undefined)).toBe(false);
    expect(canonicalInstant('2026-02-30T11:02:03.004Z')).toBe(false);
  });

  it('passes only what @IsISO8601({ strict: true }) passes, and every toISOString()', () => {
    const samples = [
      '2026-11-28T17:31:06.123Z',
      '2024-02-29T00:00:00.000Z',
      '2023-02-29T00:00:00.000Z',
      '2026-02-30T10:00:00.000Z',
      '2026-13-01T10:00:00.000Z',
      '2026-11-28T24:00:00.000Z',
      '2026-11-28T23:59:60.000Z',
      '0000-01-01T00:00:00.000Z',
      '2026-11-28T17:31:06Z',
      '2026-11-28T17:31:06.123+01:00',
      '2026-11-28 17:31:06.123Z',
      '+002026-11-28T17:31:06.123Z',
      '2026-11-28T17:31:06.123Z\n',
      '',
      '1900-02-29T00:00:00.000Z',
      '2000-02-29T00:00:00.000Z',
      '2026-04-31T00:00:00.000Z',
      '2026-00-10T00:00:00.000Z',
      '2026-01-00T00:00:00.000Z',
      '2026-12-31T23:60:00.000Z',
      '1000-01-01T00:00:00.000Z',
    ];
    for (const s of samples)
      if (canonicalInstant(s)) expect([s, isISO8601(s, { strict: true })]).toEqual([s, true]);
    expect(samples.filter(canonicalInstant)).toEqual([
      '2026-11-28T17:31:06.123Z',
      '2024-02-29T00:00:00.000Z',
      '2000-02-29T00:00:00.000Z',
      '1000-01-01T00:00:00.000Z',
    ]);
    // What toISOString() writes, and nothing else: every day of four years (one of them a
    // century that is not a leap year), each with a time, and the day after each month's last.
    for (const year of [1900, 2000, 2023, 2024]) {
      for (let day = Date.UTC(year, 0, 1); day < Date.UTC(year + 1, 0, 1); day += 86_400_000) {
        const s = new Date(day + 86_399_999).toISOString();
        expect([s, canonicalInstant(s)]).toEqual([s, true]);
      }
      for (let month = 1; month <= 12; month++) {
        const last = new Date(Date.UTC(year, month, 0)).getUTCDate();
        const s = `${year}-${String(month).padStart(2, '0')}-${last + 1}T00:00:00.000Z`;
        expect([s, canonicalInstant(s)]).toEqual([s, false]);
      }
    }
    // Every instant from the year 1000 to 9999, as toISOString() writes it; none before.
    for (let ms = -40_000_000_000_000; ms < 253_000_000_000_000; ms += 777_777_777_777) {
      const s = new Date(ms).toISOString();
      expect([s, canonicalInstant(s)]).toEqual([s, ms >= -30_610_224_000_000]);
      if (canonicalInstant(s)) expect(isISO8601(s, { strict: true })).toBe(true);
    }
  });
});

describe('the timestamp shortcut in a compiled DTO', () => {
  it("takes a toISOString() timestamp without the validator's regular expressions", () => {
    const at = getMetadataStorage()
      .getTargetValidationMetadatas(LogLineDto, '', false, false, undefined)
      .find((m) => m.propertyName === 'at');
    const [iso] = getMetadataStorage().getTargetValidatorConstraints(at?.constraintCls as never);
    const check = jest.spyOn(iso.instance, 'validate');
    try {
      const validate = compileFastValidator(LogBatchDto);
      const batch = (stamp: string) => ({
        attempt: 1,
        lines: [{ seq: 0, at: stamp, level: 'info', message: 'm' }],
      });
      expect(validate(batch('2026-11-28T17:31:06.123Z'))).toBeDefined();
      expect(check).not.toHaveBeenCalled();
      // Valid, but not as toISOString() writes it: the validator decides.
      expect(validate(batch('2026-11-28T17:31:06Z'))).toBeDefined();
      expect(check).toHaveBeenCalledTimes(1);
      expect(validate(batch('2026-11-28'))).toBeDefined();
      expect(validate(batch('yesterday'))).toBeUndefined();
    } finally {
      check.mockRestore();
    }
  });

  it('takes a message within its length by its UTF-16 length, and asks the validator past it', () => {
    const validate = compileFastValidator(LogBatchDto);
    const batch = (message: string) => ({
      attempt: 1,
      lines: [{ seq: 0, at: '2026-11-28T17:31:06.123Z', level: 'info', message }],
    });
    expect(validate(batch('x'.repeat(4000)))).toBeDefined();
    expect(validate(batch('x'.repeat(4001)))).toBeUndefined();
    // 2,001 characters in 4,002 UTF-16 units: over by units, within by characters, as the
    // validator counts (and the slow path agrees).
    expect(validate(batch('\u{1F600}'.repeat(2001)))).toBeDefined();
    expect(validate(batch('\u{1F600}'.repeat(4001)))).toBeUndefined();
  });
});

describe('compileFastValidator', () => {
  it.each<[string, new () => object]>([
    ['an async check', AsyncDto],
    ['validation groups', GroupedDto],
    ['@ValidateNested without @Type', UntypedNested],
    ['a class without checks (class-validator refuses its objects)', Empty],
    ['a field the class sets but does not validate (the whitelist would refuse it)', Defaulted],
    ['@Expose (class-transformer copies other keys)', ExposedDto],
  ])('refuses to compile %s', (_what, cls) => {
    expect(() => compileFastValidator(cls)).toThrow(NotCompilable);
  });

  it('builds nested DTOs, and refuses null or a scalar where one is expected', () => {
    const check = compileFastValidator(Typed);
    expect(check({ inner: { n: 1 } })).toEqual({ inner: { n: 1 } });
    expect((check({ inner: { n: 1 } }) as Typed).inner).toBeInstanceOf(Inner);
    expect(check({ inner: { n: 1.5 } })).toBeUndefined();
    expect(check({ inner: null })).toBeUndefined();
    expect(check({ inner: 3 })).toBeUndefined();
    expect(check({ inner: [{ n: 1 }, { n: 2 }] })).toEqual({ inner: [{ n: 1 }, { n: 2 }] });
  });
});
