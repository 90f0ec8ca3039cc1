import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { contentOfLine, idempotencyKeyOf } from './log-record';
import { readHttpRecord } from './log-ingest.service';
import {
  compileMatcher,
  fillTemplate,
  groupNamesOf,
  parseMatchSpec,
  placeholdersOf,
} from './rule-matcher';

function refused(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ContractException);
    expect((err as ContractException).code).toBe(ContractErrorCode.VALIDATION_FAILED);
    return (err as ContractException).message;
  }
  throw new Error('expected a VALIDATION_FAILED');
}

describe('parseMatchSpec', () => {
  it('accepts a regex with flags and a JSON condition map', () => {
    expect(parseMatchSpec({ regex: 'a(?<x>b)', flags: 'i' })).toEqual({
      regex: 'a(?<x>b)',
      flags: 'i',
    });
    expect(
      parseMatchSpec({ json: { level: { equals: 'error' }, 'ctx.host': { exists: true } } }),
    ).toEqual({ json: { level: { equals: 'error' }, 'ctx.host': { exists: true } } });
  });

  it('refuses a bad regex, bad flags, unknown fields and bad conditions', () => {
    expect(refused(() => parseMatchSpec({ regex: 'a(' }))).toMatch(/linear-time engine/);
    // What only a backtracking engine can do is refused, with the reason.
    expect(refused(() => parseMatchSpec({ regex: '(?=a)b' }))).toMatch(/lookarounds/);
    expect(refused(() => parseMatchSpec({ regex: '(a)\\1' }))).toMatch(/backreferences/);
    expect(refused(() => parseMatchSpec({ regex: 'a', flags: 'g' }))).toMatch(/flags/);
    expect(refused(() => parseMatchSpec({ regex: 'a', flags: 'iiii' }))).toMatch(
      /each at most once/,
    );
    expect(parseMatchSpec({ regex: 'a', flags: 'imsu' })).toEqual({ regex: 'a', flags: 'imsu' });
    expect(refused(() => parseMatchSpec({ regex: 'a', other: 1 }))).toMatch(/unknown field/);
    expect(refused(() => parseMatchSpec({ json: {} }))).toMatch(/field paths/);
    expect(refused(() => parseMatchSpec({ json: { a: { equals: [1] } } }))).toMatch(/equals/);
    expect(refused(() => parseMatchSpec({ json: { a: { exists: 'yes' } } }))).toMatch(/exists/);
    expect(refused(() => parseMatchSpec({ json: { 'a..b': { exists: true } } }))).toMatch(
      /field path/,
    );
    expect(refused(() => parseMatchSpec('regex'))).toMatch(/must be an object/);
    expect(refused(() => parseMatchSpec({}))).toMatch(/regex.*or.*json/);
  });
});

describe('compileMatcher', () => {
  it('runs the patterns that stall a backtracking engine in linear time, on a long line', () => {
    // Each once blocked the scheduler for seconds (or for good) on a line of this size.
    const line = contentOfLine(`${'a'.repeat(60_000)}!`);
    const matches = {
      '(a+)+$': false,
      '(a|aa)+$': false,
      '(.*a){25}': true,
      '^(\\w+\\s?)*$': false,
      '(a|a)*b': false,
    };
    for (const [regex, expected] of Object.entries(matches)) {
      expect(parseMatchSpec({ regex })).toEqual({ regex });
      expect({ regex, hit: compileMatcher({ regex })(line) !== null }).toEqual({
        regex,
        hit: expected,
      });
    }
    expect(compileMatcher({ regex: '(a+)+!$' })(line)).not.toBeNull();
  });

  it('knows named groups written either way, and not a look-alike inside a class', () => {
    expect(groupNamesOf({ regex: '(?P<a>x)(?<b>y)[(?<c>]' })).toEqual(new Set(['a', 'b']));
    const hit = compileMatcher({ regex: 'host (?P<host>\\S+)', flags: 'i' })(
      contentOfLine('HOST db-1 down'),
    );
    expect(hit?.('host')).toBe('db-1');
  });

  it('captures named groups of a regex; an optional group that did not take part is empty', () => {
    const m = compileMatcher({ regex: 'ERROR db=(?<db>\\w+)(?: code=(?<code>\\d+))?' });
    const hit = m(contentOfLine('12:00 ERROR db=orders'));
    expect(hit).not.toBeNull();
    expect(hit?.('db')).toBe('orders');
    expect(hit?.('code')).toBe('');
    expect(hit?.('nope')).toBeUndefined();
    expect(m(contentOfLine('12:00 INFO db=orders'))).toBeNull();
  });

  it('matches JSON conditions (equals, exists, absent) on nested paths', () => {
    const m = compileMatcher({
      json: { level: { equals: 'error' }, 'ctx.host': { exists: true }, muted: { exists: false } },
    });
    const hit = m(contentOfLine('{"level":"error","ctx":{"host":"db1","port":3306}}'));
    expect(hit?.('ctx.host')).toBe('db1');
    expect(hit?.('ctx.port')).toBe(3306);
    expect(m(contentOfLine('{"level":"info","ctx":{"host":"db1"}}'))).toBeNull();
    expect(m(contentOfLine('{"level":"error"}'))).toBeNull();
    expect(m(contentOfLine('{"level":"error","ctx":{"host":"a"},"muted":true}'))).toBeNull();
    // A text line has no fields: JSON rules never match it (nor a broken JSON line).
    expect(m(contentOfLine('level=error host=db1'))).toBeNull();
    expect(m(contentOfLine('{"level":"error",'))).toBeNull();
  });
});

describe('templates', () => {
  const template = {
    create_info: { task_type: 'demo.echo', task_name: 'restart {{db}} on {{ host }}' },
    params: { db: '{{db}}', port: '{{port}}', note: 'port {{port}}', list: ['{{db}}'] },
    labels: { db: '{{db}}' },
  };

  it('lists the placeholders and the regex group names', () => {
    expect([...placeholdersOf(template)].sort()).toEqual(['db', 'host', 'port']);
    expect([...(groupNamesOf({ regex: '(?<a>x)(?<b_2>y)(z)' }) ?? [])]).toEqual(['a', 'b_2']);
    expect(groupNamesOf({ json: { a: { exists: true } } })).toBeNull();
  });

  it('fills text everywhere, keeps JSON types for whole placeholders under params only', () => {
    const values: Record<string, unknown> = { db: 'orders', host: 'db1', port: 3306 };
    const filled = fillTemplate(template, (n) => values[n]);
    expect(filled).toEqual({
      create_info: { task_type: 'demo.echo', task_name: 'restart orders on db1' },
      params: { db: 'orders', port: 3306, note: 'port 3306', list: ['orders'] },
      labels: { db: 'orders' },
    });
    // The template itself is not changed.
    expect(template.params.port).toBe('{{port}}');
  });

  it('fills a missing value as empty text', () => {
    expect(fillTemplate({ params: { a: '{{x}}', b: 'v={{x}}' } }, () => undefined)).toEqual({
      params: { a: '', b: 'v=' },
    });
  });
});

describe('records', () => {
  it('derives the idempotency key from source, position and rule, hashed when too long', () => {
    const rec = { sourceId: 'file:app', position: '2049:1234', content: contentOfLine('x') };
    expect(idempotencyKeyOf(rec, 'R1')).toBe('log:file:app:2049:1234:R1');
    const long = { ...rec, position: 'p'.repeat(120), sourceId: `http:${'s'.repeat(64)}` };
    const key = idempotencyKeyOf(long, '01JABCDEFGHJKMNPQRSTVWXYZ0');
    expect(key).toMatch(/^log:h:[0-9a-f]{64}$/);
    expect(idempotencyKeyOf(long, '01JABCDEFGHJKMNPQRSTVWXYZ1')).not.toBe(key);
  });

  it('reads HTTP records, keeping malformed ones as such', () => {
    expect(readHttpRecord('app', { position: 7, line: 'hello' })).toMatchObject({
      sourceId: 'http:app',
      position: '7',
      content: { text: 'hello', fields: null },
    });
    expect(readHttpRecord('app', { position: 'e-1', fields: { a: 1 } })).toMatchObject({
      position: 'e-1',
      content: { fields: { a: 1 } },
    });
    const reasons = [
      readHttpRecord('app', 'text'),
      readHttpRecord('app', { line: 'no position' }),
      readHttpRecord('app', { position: -1, line: 'x' }),
      readHttpRecord('app', { position: 'has space', line: 'x' }),
      readHttpRecord('app', { position: 1 }),
      readHttpRecord('app', { position: 1, line: 'x', fields: {} }),
      readHttpRecord('app', { position: 1, line: 5 }),
      readHttpRecord('app', { position: 1, fields: [1] }),
      readHttpRecord('app', { position: 1, line: 'x', extra: true }),
      readHttpRecord('app', { position: 1, line: 'x'.repeat(70_000) }),
    ].map((r) => ('reason' in r ? r.reason : 'read'));
    expect(reasons).toEqual([
      'a record must be a JSON object',
      expect.stringMatching(/^position/),
      expect.stringMatching(/^position/),
      expect.stringMatching(/^position/),
      'a record has exactly one of line or fields',
      'a record has exactly one of line or fields',
      'line must be a string',
      'fields must be a JSON object',
      'unknown field(s): extra',
      expect.stringMatching(/longer than/),
    ]);
  });
});
