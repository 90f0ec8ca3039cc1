import { ContractException } from '@baton/task-contract';
import { MAX_NODES, parseDefinition } from './topology-definition';

const ctx = { taskTypes: new Set(['demo.echo']), topologies: new Set(['child']) };
const echo = { create_info: { task_type: 'demo.echo' } };

/** The node a refused definition names, and its message. */
function refusal(nodes: unknown[]): { node: unknown; message: string } {
  try {
    parseDefinition({ name: 't', nodes }, ctx);
  } catch (err) {
    if (!(err instanceof ContractException)) throw err;
    expect(err.httpStatus).toBe(400);
    return { node: (err.data as { node?: unknown }).node, message: err.message };
  }
  throw new Error('the definition was accepted');
}

describe('parseDefinition', () => {
  it('accepts every primitive, with defaults filled in', () => {
    const spec = parseDefinition(
      {
        name: 'all',
        nodes: [
          { key: 'list', task: echo },
          { key: 'each', depends_on: ['list'], for_each: '{{nodes.list.result.xs}}', task: echo },
          {
            key: 'pick',
            depends_on: ['list'],
            switch: { value: '{{nodes.list.status}}', cases: { SUCCESS: ['sub'] } },
          },
          { key: 'sub', depends_on: ['pick'], topology: { name: 'child' } },
          {
            key: 'hold',
            depends_on: ['each', 'sub'],
            trigger_rule: 'all_done',
            wait: { signal: 'go' },
          },
          { key: 'undo', on_failure: true, task: echo },
        ],
      },
      ctx,
    );
    expect(spec.nodes.map((n) => [n.key, n.trigger_rule])).toEqual([
      ['list', 'all_success'],
      ['each', 'all_success'],
      ['pick', 'all_success'],
      ['sub', 'all_success'],
      ['hold', 'all_done'],
      ['undo', 'all_success'],
    ]);
    expect(spec.nodes[1]).toMatchObject({ concurrency: 10_000 });
    expect(spec.nodes[0]).toHaveProperty('task', {
      create_info: { task_name: 'list', task_type: 'demo.echo' },
    });
  });

  it.each([
    ['two kinds in one node', [{ key: 'a', task: echo, wait: { seconds: 1 } }], 'a', 'exactly one'],
    [
      'a duplicate key',
      [
        { key: 'a', task: echo },
        { key: 'a', task: echo },
      ],
      'a',
      'two nodes',
    ],
    ['a self-dependency', [{ key: 'a', depends_on: ['a'], task: echo }], 'a', 'itself'],
    [
      'an approval without its timeout',
      [{ key: 'g', approval: { on_timeout: 'reject' } }],
      'g',
      'approval.timeout_seconds is required',
    ],
    [
      'an approval whose timeout decides nothing',
      [{ key: 'g', approval: { timeout_seconds: 60 } }],
      'g',
      'approval.on_timeout is required',
    ],
    [
      'an approval a viewer may decide',
      [
        {
          key: 'g',
          approval: { timeout_seconds: 60, on_timeout: 'reject', approvers: { roles: ['viewer'] } },
        },
      ],
      'g',
      'approval.approvers.roles must be a list of operator, admin',
    ],
    [
      'an approval field of no meaning',
      [{ key: 'g', approval: { timeout_seconds: 60, on_timeout: 'reject', quorum: 2 } }],
      'g',
      'approval has no field quorum',
    ],
    ['an unknown rule', [{ key: 'a', trigger_rule: 'most', task: echo }], 'a', 'trigger_rule'],
    ['a run-owned field', [{ key: 'a', task: { ...echo, tenant: 'x' } }], 'a', 'set by the run'],
    [
      'a for_each that is not a placeholder',
      [{ key: 'a', for_each: 'xs', task: echo }],
      'a',
      'for_each',
    ],
    [
      '{{item}} outside a for_each',
      [{ key: 'a', task: { ...echo, params: { x: '{{item}}' } } }],
      'a',
      'for_each',
    ],
    ['an unknown sub-topology', [{ key: 'a', topology: { name: 'nope' } }], 'a', 'not defined'],
    ['a wait with two ends', [{ key: 'a', wait: { seconds: 1, signal: 's' } }], 'a', 'exactly one'],
    [
      'a switch naming a node that does not follow it',
      [
        { key: 's', switch: { value: '{{input.x}}', cases: { x: ['b'] } } },
        { key: 'b', task: echo },
      ],
      's',
      'does not depend',
    ],
    [
      'a node depending on an on_failure node',
      [
        { key: 'h', on_failure: true, task: echo },
        { key: 'b', depends_on: ['h'], task: echo },
      ],
      'b',
      'on_failure',
    ],
    [
      'a finally node depending on a node of the run',
      [
        { key: 'a', task: echo },
        { key: 'f', finally: true, depends_on: ['a'], task: echo },
      ],
      'f',
      'finally',
    ],
    [
      'a node both on_failure and finally',
      [{ key: 'f', finally: true, on_failure: true, task: echo }],
      'f',
      'not both',
    ],
    [
      'an optional handler',
      [{ key: 'h', on_failure: true, optional: true, task: echo }],
      'h',
      'optional',
    ],
    [
      'a finally of the wrong shape',
      [{ key: 'f', finally: { on: 1 }, task: echo }],
      'f',
      'finally must',
    ],
    [
      'run.error in a node of the run',
      [{ key: 'a', task: { ...echo, params: { e: '{{run.error}}' } } }],
      'a',
      'only to on_failure and finally nodes',
    ],
    [
      'a node reading nodes.X.error of a node not upstream',
      [
        { key: 'a', task: echo },
        { key: 'b', task: { ...echo, params: { e: '{{nodes.a.error}}' } } },
      ],
      'b',
      'not upstream',
    ],
  ])('refuses %s, naming the node', (_case, nodes, node, words) => {
    const r = refusal(nodes);
    expect(r.node).toBe(node);
    expect(r.message).toContain(words);
  });

  it('lets handlers and finally nodes read every node of the run and its failure', () => {
    const spec = parseDefinition(
      {
        name: 't',
        fail_fast: 'cancel',
        nodes: [
          { key: 'a', optional: true, task: echo },
          {
            key: 'h',
            on_failure: true,
            task: { ...echo, params: { e: '{{run.error}}', a: '{{nodes.a.error}}' } },
          },
          {
            key: 'f',
            finally: { on_cancel: false },
            task: { ...echo, params: { o: '{{run.outcome}}', n: '{{run.failed_nodes}}' } },
          },
          { key: 'g', finally: true, depends_on: ['f'], task: echo },
        ],
      },
      ctx,
    );
    expect(spec.fail_fast).toBe('cancel');
    expect(spec.nodes.map((n) => [n.key, n.optional, n.finally])).toEqual([
      ['a', true, undefined],
      ['h', undefined, undefined],
      ['f', undefined, { on_cancel: false }],
      ['g', undefined, { on_cancel: true }],
    ]);
  });

  it('refuses a deadline that is not a whole number of seconds within 30 days', () => {
    for (const deadline_seconds of [0, -1, 1.5, '60', 30 * 24 * 3600 + 1])
      expect(() =>
        parseDefinition({ name: 't', deadline_seconds, nodes: [{ key: 'a', task: echo }] }, ctx),
      ).toThrow('deadline_seconds must be a whole number of seconds');
    expect(
      parseDefinition({ name: 't', deadline_seconds: 60, nodes: [{ key: 'a', task: echo }] }, ctx)
        .deadline_seconds,
    ).toBe(60);
  });

  it('takes wait.until as an RFC 3339 time with its zone (years to 9999) or a placeholder', () => {
    const wait = (until: string) => () =>
      parseDefinition({ name: 't', nodes: [{ key: 'w', wait: { until } }] }, ctx);
    for (const until of [
      '+010000-01-01T00:00:00Z',
      '2026-12-01',
      '2026-12-01T03:00:00',
      'Tue, 01 Dec 2026 03:00:00 GMT',
      '2026-12-01T03:00:00Z trailing',
    ])
      expect(wait(until)).toThrow('wait.until must be an RFC 3339 time');
    for (const until of ['2026-12-01T03:00:00Z', '2026-12-01T03:00:00.5+01:00', '{{input.at}}'])
      expect(wait(until)).not.toThrow();
  });

  it('refuses a fail_fast that is not true, false or "cancel"', () => {
    expect(() =>
      parseDefinition({ name: 't', fail_fast: 'yes', nodes: [{ key: 'a', task: echo }] }, ctx),
    ).toThrow('fail_fast must be');
  });

  it('stores a definition without the new fields as it stored it before (no new version)', () => {
    const spec = parseDefinition({ name: 't', nodes: [{ key: 'a', task: echo }] }, ctx);
    expect(Object.keys(spec)).toEqual(['name', 'description', 'rollback_on_failure', 'nodes']);
    expect(Object.keys(spec.nodes[0])).toEqual([
      'key',
      'depends_on',
      'trigger_rule',
      'on_failure',
      'task',
    ]);
  });

  it(`names the first node past ${MAX_NODES}`, () => {
    const nodes = Array.from({ length: MAX_NODES + 5 }, (_, i) => ({ key: `n${i}`, task: echo }));
    expect(refusal(nodes).node).toBe(`n${MAX_NODES}`);
  });

  it('lists a problem that stops the reading (a cycle) as the only one', () => {
    try {
      parseDefinition(
        {
          name: 't',
          nodes: [
            { key: 'a', depends_on: ['b'], task: echo },
            { key: 'b', depends_on: ['a'], task: echo },
          ],
        },
        ctx,
      );
      throw new Error('the definition was accepted');
    } catch (err) {
      if (!(err instanceof ContractException)) throw err;
      expect(err.data).toEqual({
        node: 'b',
        errors: [{ node: 'b', message: 'node b: depends_on a closes a cycle' }],
      });
    }
  });

  it('lists every node at fault at once in data.errors, the first also in data.node', () => {
    let data: { node?: string; errors?: { node?: string; message: string }[] } = {};
    try {
      parseDefinition(
        {
          name: 't',
          nodes: [
            { key: 'a', task: { create_info: { task_type: 'demo.nowhere' } } },
            { key: 'b', depends_on: ['a'], task: echo },
            { key: 'c', depends_on: ['zz'], task: echo },
            { key: 'd', task: echo, wait: { seconds: 1 } },
          ],
        },
        ctx,
      );
    } catch (err) {
      if (!(err instanceof ContractException)) throw err;
      expect(err.message).toBe(
        'node a: task type demo.nowhere is not registered: no worker has declared it',
      );
      data = err.data as typeof data;
    }
    expect(data.node).toBe('a');
    // b depends on a, whose own problem is reported: b is not blamed for it.
    expect(data.errors?.map((e) => e.node)).toEqual(['a', 'd', 'c']);
    expect(data.errors?.[2].message).toBe('node c: depends_on names zz, which is not a node');
  });

  it('checks placeholders and cycles only once the nodes are sound, then reports each', () => {
    const nodes = [
      { key: 'a', task: { ...echo, params: { x: '{{nodes.b.result}}' } } },
      { key: 'b', task: echo },
      { key: 'c', task: { ...echo, params: { y: '{{bogus.path}}' } } },
    ];
    try {
      parseDefinition({ name: 't', nodes }, ctx);
      throw new Error('the definition was accepted');
    } catch (err) {
      if (!(err instanceof ContractException)) throw err;
      const errors = (err.data as { errors: { node: string }[] }).errors;
      expect(errors.map((e) => e.node)).toEqual(['a', 'c']);
    }
  });
});
