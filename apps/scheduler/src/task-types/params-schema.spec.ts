import {
  JsonSchemas,
  MAX_PROBLEMS,
  MAX_SCHEMA_BYTES,
  describeProblems,
  placeholderPointers,
} from './params-schema';

describe('JsonSchemas', () => {
  const schemas = new JsonSchemas();

  it('names each problem at its own JSON pointer, a missing field at its place', () => {
    const schema = {
      type: 'object',
      properties: {
        host: { type: 'string', format: 'hostname' },
        'a/b': { type: 'object', required: ['x~y'] },
        ports: { type: 'array', items: { type: 'integer' } },
      },
      required: ['host'],
    };
    expect(schemas.check(schema, { 'a/b': {}, ports: [1, 'two'] }, '/params')).toEqual(
      expect.arrayContaining([
        { pointer: '/params/host', message: 'is required' },
        { pointer: '/params/a~1b/x~0y', message: 'is required' },
        { pointer: '/params/ports/1', message: 'must be integer' },
      ]),
    );
    expect(schemas.check(schema, { host: 'db-1.example.com' }, '/params')).toEqual([]);
    expect(schemas.check(schema, { host: 'not a host!' }, '')).toEqual([
      { pointer: '/host', message: 'must match format "hostname"' },
    ]);
  });

  it('leaves to the run what a placeholder could change, and checks the rest', () => {
    const schema = {
      type: 'object',
      properties: {
        n: { type: 'integer' },
        m: { type: 'integer' },
        target: {
          oneOf: [
            { properties: { kind: { const: 'host' } }, required: ['kind', 'host'] },
            { properties: { kind: { const: 'cluster' } }, required: ['kind', 'cluster'] },
          ],
        },
      },
      required: ['n', 'must'],
      additionalProperties: false,
    };
    const value = { n: '{{n}}', m: 'x', target: { kind: '{{input.kind}}', host: 'h' }, extra: 1 };
    const found = schemas.check(schema, value, '/params', placeholderPointers(value));
    expect(found).toHaveLength(3);
    expect(found).toEqual(
      expect.arrayContaining([
        { pointer: '/params/m', message: 'must be integer' },
        { pointer: '/params/must', message: 'is required' },
        { pointer: '/params/extra', message: 'is not a field of this type' },
      ]),
    );
    expect(placeholderPointers({ a: ['x', '{{y}}'], 'b/c': { d: 'e {{f}}' } })).toEqual([
      '/a/1',
      '/b~1c/d',
    ]);
  });

  it('runs patterns in linear time: a pattern that backtracks for seconds answers at once', () => {
    const schema = { properties: { s: { type: 'string', pattern: '^(a+)+$' } } };
    expect(schemas.check(schema, { s: `${'a'.repeat(5000)}b` }, '')).toEqual([
      { pointer: '/s', message: 'must match pattern "^(a+)+$"' },
    ]);
    // The engine is RE2: what only a backtracking engine runs (lookaround) is refused when
    // declared, not met at a create.
    expect(schemas.problemOf({ properties: { s: { pattern: '(?=a)a' } } })).toMatch(
      /^is not a JSON Schema/,
    );
  });

  it('reports at most MAX_PROBLEMS, and says how many more in one line', () => {
    const schema = { type: 'array', items: { type: 'string' } };
    const found = schemas.check(
      schema,
      Array.from({ length: 50 }, (_, i) => i),
      '',
    );
    expect(found).toHaveLength(MAX_PROBLEMS);
    expect(describeProblems(found)).toBe(
      `/0 must be string; /1 must be string; /2 must be string (and ${MAX_PROBLEMS - 3} more)`,
    );
  });

  it('refuses what cannot be a schema: a non-object, an unknown type, a reference outside it, a huge one', () => {
    expect(schemas.problemOf([])).toBe('must be a JSON Schema object');
    expect(schemas.problemOf({ type: 'nothing' })).toMatch(/^is not a JSON Schema/);
    expect(schemas.problemOf({ $ref: 'https://example.com/s.json' })).toMatch(
      /^is not a JSON Schema.*can't resolve reference/,
    );
    const huge = { description: 'x'.repeat(MAX_SCHEMA_BYTES) };
    expect(schemas.problemOf(huge)).toMatch(/bytes; at most 61440 are kept$/);
    // draft-07 (what many generators write) is read as draft-07; an unknown draft is refused.
    const d7 = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      properties: { n: { type: 'integer', exclusiveMinimum: 0 } },
    };
    expect(schemas.problemOf(d7)).toBeUndefined();
    expect(schemas.check(d7, { n: 0 }, '')).toEqual([{ pointer: '/n', message: 'must be > 0' }]);
    expect(schemas.problemOf({ $schema: 'https://example.com/mine' })).toMatch(/^names \$schema/);
    // References inside the schema, and annotations another tool reads, are fine.
    expect(
      schemas.problemOf({
        $id: 'https://example.com/backup',
        $defs: { days: { type: 'integer', minimum: 1 } },
        properties: { keep: { $ref: '#/$defs/days' } },
        'x-form': { order: ['keep'] },
      }),
    ).toBeUndefined();
    // A new version of a schema under the same $id replaces the old one; its own $refs resolve.
    const withId = {
      $id: 'https://example.com/one',
      $defs: { n: { type: 'integer' } },
      properties: { n: { $ref: 'https://example.com/one#/$defs/n' } },
    };
    expect(schemas.check(withId, { n: 'x' }, '')).toEqual([
      { pointer: '/n', message: 'must be integer' },
    ]);
    expect(schemas.check({ ...withId, minProperties: 2 }, { n: 1 }, '')).toEqual([
      { pointer: '', message: 'must NOT have fewer than 2 properties' },
    ]);
  });
});
