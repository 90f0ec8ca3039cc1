import { JsonSchemas, MAX_PROBLEMS, MAX_SCHEMA_BYTES, describeProblems } from './params-schema';

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

  it('spares the pointers the caller says a placeholder fills', () => {
    const schema = { properties: { n: { type: 'integer' }, m: { type: 'integer' } } };
    const value = { n: '{{n}}', m: 'x' };
    expect(schemas.check(schema, value, '/params', (p) => p === '/n')).toEqual([
      { pointer: '/params/m', message: 'must be integer' },
    ]);
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
    expect(schemas.problemOf(huge)).toMatch(/bytes; at most 65536 are kept$/);
    // References inside the schema, and annotations another tool reads, are fine.
    expect(
      schemas.problemOf({
        $id: 'https://example.com/backup',
        $defs: { days: { type: 'integer', minimum: 1 } },
        properties: { keep: { $ref: '#/$defs/days' } },
        'x-form': { order: ['keep'] },
      }),
    ).toBeUndefined();
    // Two equal schemas with one $id compile once each without clashing.
    const withId = { $id: 'https://example.com/one', type: 'object' };
    expect(new JsonSchemas().problemOf(withId)).toBeUndefined();
    expect(schemas.check({ ...withId, minProperties: 1 }, {}, '')).toEqual([
      { pointer: '', message: 'must NOT have fewer than 1 properties' },
    ]);
    expect(schemas.check({ ...withId }, {}, '')).toEqual([]);
  });
});
