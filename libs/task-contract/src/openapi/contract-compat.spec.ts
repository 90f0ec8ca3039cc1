import { breakingChanges, compareVersions, versionProblems } from './contract-compat';

interface Schema {
  type: string;
  required: string[];
  properties: Record<string, { type: string; enum?: string[] }>;
}
interface Operation {
  parameters: { in: string; name: string; required: boolean }[];
  requestBody: unknown;
  responses: Record<string, unknown>;
}
interface Doc {
  info: { version: string };
  paths: Record<string, Partial<Record<'post', Operation>>>;
  components: { schemas: Partial<Record<'Req' | 'Answer', Schema>> & Record<string, Schema> };
}

/** A small document: one operation with a request and an answer schema. */
function doc(version = '1.0.0'): Doc {
  return {
    info: { version },
    paths: {
      '/v1/task/{task_type}': {
        post: {
          parameters: [{ in: 'header', name: 'X-Baton-Fence', required: true }],
          requestBody: {
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Req' } } },
          },
          responses: { '200': {}, '409': {} },
        },
      },
    },
    components: {
      schemas: {
        Req: {
          type: 'object',
          required: ['task_id'],
          properties: {
            task_id: { type: 'string' },
            status: { type: 'string', enum: ['INIT', 'PAUSE'] },
          },
        },
        Answer: {
          type: 'object',
          required: ['alive'],
          properties: { alive: { type: 'boolean' }, status: { type: 'string', enum: ['A', 'B'] } },
        },
      },
    },
  };
}

describe('breakingChanges', () => {
  it('finds nothing between equal documents, nor for an optional answer field added', () => {
    expect(breakingChanges(doc(), doc())).toEqual([]);
    const next = doc();
    next.components.schemas.Answer!.properties.execution_lost = { type: 'boolean' };
    expect(breakingChanges(doc(), next)).toEqual([]);
  });

  it.each([
    [
      'an operation removed',
      (d: Doc) => delete d.paths['/v1/task/{task_type}'].post,
    ],
    ['a response removed', (d: Doc) => delete d.paths['/v1/task/{task_type}'].post!.responses['409']],
    [
      'a new required parameter',
      (d: Doc) =>
        d.paths['/v1/task/{task_type}'].post!.parameters.push({
          in: 'query',
          name: 'x',
          required: true,
        }),
    ],
    ['a request field newly required', (d: Doc) => d.components.schemas.Req!.required.push('status')],
    ['a request field removed', (d: Doc) => delete d.components.schemas.Req!.properties.status],
    [
      'a request enum value removed',
      (d: Doc) => (d.components.schemas.Req!.properties.status.enum = ['INIT']),
    ],
    [
      'an answer field no longer required',
      (d: Doc) => (d.components.schemas.Answer!.required = []),
    ],
    [
      'an answer enum value added',
      (d: Doc) => d.components.schemas.Answer!.properties.status.enum!.push('C'),
    ],
    ['a schema removed', (d: Doc) => delete d.components.schemas.Answer],
  ])('finds %s', (_what, change) => {
    const next = doc();
    change(next);
    expect(breakingChanges(doc(), next)).toHaveLength(1);
  });
});

describe('versionProblems', () => {
  const breaking = (version: string): Doc => {
    const d = doc(version);
    d.components.schemas.Req!.required.push('status');
    return d;
  };

  it('refuses a breaking change unless the major version moved', () => {
    expect(versionProblems(doc('1.0.0'), breaking('1.0.0')).join('\n')).toMatch(
      /new major version[\s\S]*Req.status is newly required/,
    );
    expect(versionProblems(doc('1.0.0'), breaking('1.1.0'))).not.toEqual([]);
    expect(versionProblems(doc('1.0.0'), breaking('2.0.0'))).toEqual([]);
  });

  it('lets a compatible change through at any version, but never a version going back', () => {
    expect(versionProblems(doc('1.0.0'), doc('1.0.0'))).toEqual([]);
    expect(versionProblems(doc('1.1.0'), doc('1.0.0'))).toEqual(['version 1.0.0 is lower than 1.1.0']);
  });

  it('compares versions by number', () => {
    expect(compareVersions('1.10.0', '1.9.0')).toBeGreaterThan(0);
    expect(compareVersions('1.0.0', '1.0.0')).toBe(0);
  });
});
