import { Logger } from '@nestjs/common';
import { ManualClock } from '@baton/time';
import { AttemptLogBatchDto, AttemptLogVerdict, LogLineDto } from '../dto/callback.dto';
import { ContractErrorCode } from '../errors/contract.exception';
import {
  WorkerProtocolError,
  WorkerUnavailableError,
  WorkerValidationError,
} from '../errors/worker-call.errors';
import { AttemptLogShipper, lineSize } from './attempt-log-shipper';

const quiet = { warn: () => undefined, log: () => undefined } as unknown as Logger;

/** A scheduler's side of the log calls, scripted: what each call answers, and what it got. */
function scheduler(answers: ('ok' | 'down' | 'no-route' | 'too-large')[] = []) {
  const many: AttemptLogBatchDto[][] = [];
  const single: { taskId: string; attempt: number; lines: LogLineDto[] }[] = [];
  const refuse = new Set<string>();
  return {
    many,
    single,
    refuse,
    callbacks: {
      logs: async (taskId: string, attempt: number, _fence: number, lines: LogLineDto[]) => {
        single.push({ taskId, attempt, lines });
        if (refuse.has(`${taskId}:400`))
          throw new WorkerValidationError('bad line', ContractErrorCode.VALIDATION_FAILED, 400);
      },
      logsMany: async (batches: AttemptLogBatchDto[]): Promise<AttemptLogVerdict[]> => {
        many.push(batches);
        const answer = answers.shift() ?? 'ok';
        if (answer === 'down') throw new WorkerUnavailableError('down', 50300, 503);
        if (answer === 'too-large')
          throw new WorkerValidationError('too large', ContractErrorCode.PAYLOAD_TOO_LARGE, 413);
        if (answer === 'no-route')
          throw new WorkerProtocolError('no route', ContractErrorCode.NOT_FOUND, 404);
        return batches.map((b) =>
          refuse.has(b.task_id)
            ? { task_id: b.task_id, attempt: b.attempt, refused: 'stale' as const }
            : { task_id: b.task_id, attempt: b.attempt, accepted: b.lines.length, duplicates: 0 },
        );
      },
    },
  };
}

const seqs = (b: AttemptLogBatchDto): number[] => b.lines.map((l) => l.seq);

describe('AttemptLogShipper', () => {
  let clock: ManualClock;
  beforeEach(() => {
    clock = new ManualClock();
  });

  it('sends the lines of every attempt in one call, each attempt numbered from 0, in order', async () => {
    const s = scheduler();
    const shipper = new AttemptLogShipper(s.callbacks, clock, quiet);
    const a = shipper.open('A', 1, 7);
    const b = shipper.open('B', 2, 9);
    a.info('a0');
    b.warn('b0', { k: 1 });
    a.info('a1');
    await clock.advance(500);
    expect(s.many).toHaveLength(1);
    expect(s.many[0].map((x) => [x.task_id, x.attempt, x.fence, seqs(x)])).toEqual([
      ['A', 1, 7, [0, 1]],
      ['B', 2, 9, [0]],
    ]);
    expect(s.many[0][1].lines[0]).toMatchObject({ level: 'warn', message: 'b0', fields: { k: 1 } });
    expect(s.single).toEqual([]);
  });

  it('drops the lines the scheduler refused and keeps sending the others', async () => {
    const s = scheduler();
    s.refuse.add('GONE');
    const shipper = new AttemptLogShipper(s.callbacks, clock, quiet);
    shipper.open('GONE', 1, 1).info('x');
    const ok = shipper.open('OK', 1, 1);
    ok.info('y');
    await clock.advance(500);
    ok.info('z');
    await clock.advance(500);
    expect(s.many.map((call) => call.map((x) => `${x.task_id}:${seqs(x).join(',')}`))).toEqual([
      ['GONE:0', 'OK:0'],
      ['OK:1'],
    ]);
  });

  it('sends the same lines again, in order, after a call that failed', async () => {
    const s = scheduler(['down']);
    const shipper = new AttemptLogShipper(s.callbacks, clock, quiet);
    const a = shipper.open('A', 1, 1);
    a.info('0');
    await clock.advance(500);
    a.info('1');
    await clock.until(() => s.many.length === 2, 'the retry', { stepMs: 10, maxMs: 60_000 });
    expect(s.many.map((call) => call.map(seqs))).toEqual([[[0]], [[0, 1]]]);
  });

  it('falls back to a call per attempt when the scheduler has no call for many', async () => {
    const s = scheduler(['no-route']);
    const shipper = new AttemptLogShipper(s.callbacks, clock, quiet);
    shipper.open('A', 1, 1).info('a');
    shipper.open('B', 1, 1).info('b');
    await clock.advance(500);
    expect(s.single.map((x) => [x.taskId, x.lines.map((l) => l.message)])).toEqual([
      ['A', ['a']],
      ['B', ['b']],
    ]);
    shipper.open('C', 1, 1).info('c');
    await clock.advance(500);
    expect(s.many).toHaveLength(1);
    expect(s.single.map((x) => x.taskId)).toEqual(['A', 'B', 'C']);
    // Ten minutes on (the scheduler may have been upgraded): one call for many again.
    await clock.advance(600_000);
    shipper.open('D', 1, 1).info('d');
    await clock.advance(500);
    expect(s.many.map((call) => call.map((x) => x.task_id))).toEqual([['A', 'B'], ['D']]);
  });

  it('sends a call at once when a thousand lines wait, and a few lines after half a second', async () => {
    const s = scheduler();
    const shipper = new AttemptLogShipper(s.callbacks, clock, quiet);
    for (let t = 0; t < 100; t++) {
      const log = shipper.open(`T${t}`, 1, 1);
      for (let i = 0; i < 10; i++) log.info(`line ${i}`);
    }
    await clock.advance(0);
    expect(s.many.map((call) => call.reduce((n, x) => n + x.lines.length, 0))).toEqual([1000]);
    shipper.open('U', 1, 1).info('alone');
    await clock.advance(499);
    expect(s.many).toHaveLength(1);
    await clock.advance(1);
    expect(s.many.map((call) => call.map((x) => x.task_id))[1]).toEqual(['U']);
  });

  it('waits out its backoff after a failed call, however many lines came meanwhile', async () => {
    let release: () => void = () => undefined;
    const s = scheduler(['down']);
    const logsMany = s.callbacks.logsMany;
    s.callbacks.logsMany = async (batches) => {
      if (s.many.length === 0) await new Promise<void>((r) => (release = r));
      return logsMany(batches);
    };
    const shipper = new AttemptLogShipper(s.callbacks, clock, quiet);
    const a = shipper.open('A', 1, 1);
    a.info('first');
    await clock.advance(500);
    // While the first call is under way, a full call's worth of lines comes in: it waits.
    for (let i = 0; i < 1000; i++) a.info(`more ${i}`);
    release();
    await clock.advance(0);
    expect(s.many).toHaveLength(1);
    // The first retry is due a second after the failure (FLUSH_MS doubled), not at once.
    await clock.advance(999);
    expect(s.many).toHaveLength(1);
    await clock.advance(1);
    await clock.until(() => s.many.length >= 2, 'the retry', { stepMs: 1, maxMs: 1000 });
    expect(s.many[1][0].lines[0].message).toBe('first');
  });

  it('puts at most 2,000 lines in one call', async () => {
    const s = scheduler();
    const shipper = new AttemptLogShipper(s.callbacks, clock, quiet);
    for (let t = 0; t < 6; t++) {
      const log = shipper.open(`T${t}`, 1, 1);
      for (let i = 0; i < 450; i++) log.debug(`line ${i}`);
    }
    await clock.advance(500);
    const sizes = s.many.map((call) => call.reduce((n, x) => n + x.lines.length, 0));
    expect(sizes.every((n) => n <= 2000)).toBe(true);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(2700);
  });

  it('keeps a call within bytes a scheduler takes, however long the lines', async () => {
    const s = scheduler();
    const shipper = new AttemptLogShipper(s.callbacks, clock, quiet);
    const log = shipper.open('LONG', 1, 1);
    for (let i = 0; i < 300; i++) log.info('x'.repeat(4000));
    await clock.advance(500);
    const bytes = s.many.map((call) => Buffer.byteLength(JSON.stringify({ batches: call })));
    expect(s.many.length).toBeGreaterThan(1);
    expect(Math.max(...bytes)).toBeLessThan(300 * 1024);
    expect(s.many.flatMap((call) => call.flatMap(seqs))).toEqual(
      Array.from({ length: 300 }, (_, i) => i),
    );
  });

  it('sends each attempt on its own after a call refused whole, and drops only what is refused again', async () => {
    const s = scheduler(['too-large']);
    s.refuse.add('BAD:400');
    const shipper = new AttemptLogShipper(s.callbacks, clock, quiet);
    shipper.open('BAD', 1, 1).info('bad');
    shipper.open('GOOD', 1, 1).info('good');
    await clock.advance(500);
    expect(s.single.map((x) => x.taskId)).toEqual(['BAD', 'GOOD']);
    // Nothing of BAD is sent again; later lines go in one call again.
    shipper.open('GOOD', 1, 1).info('later');
    await clock.advance(500);
    expect(s.many.map((call) => call.map((x) => x.task_id))).toEqual([['BAD', 'GOOD'], ['GOOD']]);
    expect(s.single).toHaveLength(2);
  });
});

/** JSON members and items of a value, counted the plain way. */
function countMembers(v: unknown): number {
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + 1 + countMembers(x), 0);
  if (v && typeof v === 'object')
    return Object.values(v).reduce((n: number, x) => n + 1 + countMembers(x), 0);
  return 0;
}

describe('lineSize', () => {
  it('is the bytes and members of the line written as JSON, whatever it holds', () => {
    const messages = [
      '',
      'echo line 1 of 10',
      'a "quoted" word and a back\\slash',
      'tab\tand newline\n and \u0001 control',
      'caf\u00e9 \u2014 \u{1F600} wide',
      'lone \ud800 surrogate',
      '\u007f delete and ~ tilde',
      'x'.repeat(4000),
    ];
    const fieldsOf = [
      undefined,
      { line: 1 },
      { host: 'db1', ms: [1, 2, { deep: null }] },
      { 'k"ey': 'v\u00e9' },
    ];
    for (const [i, message] of messages.entries())
      for (const fields of fieldsOf)
        for (const level of ['debug', 'error'] as const) {
          const line: LogLineDto = {
            seq: i * 12_345,
            at: new Date(1_700_000_000_000 + i).toISOString(),
            level,
            message,
          };
          if (fields) line.fields = fields;
          expect([message, fields, lineSize(line)]).toEqual([
            message,
            fields,
            { bytes: Buffer.byteLength(JSON.stringify(line)), members: countMembers(line) },
          ]);
        }
  });

  it('leaves out fields whose JSON is nothing, as JSON.stringify does', () => {
    const line: LogLineDto = {
      seq: 3,
      at: '2026-11-29T04:00:00.000Z',
      level: 'info',
      message: 'm',
      fields: { toJSON: () => undefined } as unknown as Record<string, unknown>,
    };
    expect(lineSize(line).bytes).toBe(Buffer.byteLength(JSON.stringify(line)));
  });
});
