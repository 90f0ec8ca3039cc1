import { describe, expect, it } from '@jest/globals';
import { layOut } from './layout';
import {
  Run,
  RunNode,
  drawableNodes,
  kindLabel,
  parseDefinitionText,
  whyNotNode,
  whyNotRun,
} from './model';

const run = (over: Partial<Run> = {}): Run => ({
  run_id: 'R',
  name: 'demo',
  version: 1,
  tenant: 'default',
  status: 'RUNNING',
  outcome: null,
  cancel_requested: false,
  error: null,
  reason: null,
  deadline_at: null,
  failed_nodes: [],
  optional_failed: [],
  finally_failed: [],
  labels: {},
  input: {},
  parent_run_id: null,
  created_at: '2026-11-26T06:00:00.000Z',
  started_at: null,
  finished_at: null,
  ...over,
});

const node = (over: Partial<RunNode> = {}): RunNode => ({
  key: 'a',
  kind: 'task',
  depends_on: [],
  status: 'PENDING',
  phase: 'main',
  optional: false,
  task_id: null,
  task_status: null,
  attempt: null,
  started_at: null,
  finished_at: null,
  progress: null,
  result: null,
  error: null,
  ...over,
});

describe('parseDefinitionText', () => {
  it('reads YAML and JSON alike', () => {
    expect(parseDefinitionText('name: x\nnodes: []\n')).toEqual({
      ok: true,
      body: { name: 'x', nodes: [] },
    });
    expect(parseDefinitionText('{"name": "x", "nodes": [{"key": "a"}]}')).toEqual({
      ok: true,
      body: { name: 'x', nodes: [{ key: 'a' }] },
    });
    expect(parseDefinitionText('[{"name": "only"}]')).toEqual({ ok: true, body: { name: 'only' } });
    // JSON indented with tabs, which YAML alone would refuse.
    expect(parseDefinitionText('{\n\t"name": "tabs",\n\t"nodes": []\n}')).toEqual({
      ok: true,
      body: { name: 'tabs', nodes: [] },
    });
  });

  it.each([
    ['empty text', '  \n', 'the file is empty'],
    ['broken YAML', 'name: [unclosed', 'not YAML or JSON'],
    ['two documents', 'name: a\n---\nname: b\n', 'holds 2 definitions'],
    ['a list of two', '[{"name": "a"}, {"name": "b"}]', 'a list of 2 definitions'],
    ['a scalar', '42', 'a definition is an object'],
  ])('refuses %s with a reason', (_case, text, words) => {
    const r = parseDefinitionText(text);
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.error).toContain(words);
  });
});

describe('drawableNodes', () => {
  it('draws what it can of a faulty body: a missing or repeated key gets a stand-in', () => {
    const drawn = drawableNodes({
      nodes: [
        { key: 'a', task: { create_info: { task_type: 'demo.echo' } } },
        { key: 'a', depends_on: ['a', 7], switch: {} },
        { depends_on: 'a', wait: { seconds: 1 } },
        { key: 'h', on_failure: true, for_each: '{{input.xs}}', task: {} },
      ],
    });
    expect(drawn).toEqual([
      { key: 'a', depends_on: [], label: 'demo.echo' },
      { key: '#2', depends_on: ['a'], label: 'switch' },
      { key: '#3', depends_on: [], label: 'wait' },
      { key: 'h', depends_on: [], label: 'on failure · for each · task' },
    ]);
    expect(drawableNodes({ nodes: 'none' })).toEqual([]);
  });
});

describe('what a run allows', () => {
  it('retries only a finished run that did not succeed', () => {
    expect(whyNotRun(run(), 'retry')).toBe('only a finished run can be retried');
    expect(whyNotRun(run({ status: 'FINISH', outcome: 'SUCCESS' }), 'retry')).toContain(
      'nothing failed',
    );
    expect(whyNotRun(run({ status: 'FINISH', outcome: 'FAIL' }), 'retry')).toBeNull();
    expect(whyNotRun(run({ status: 'FINISH', outcome: 'CANCELLED' }), 'retry')).toBeNull();
  });

  it('pauses a running run, continues a paused one, cancels one not ended', () => {
    expect(whyNotRun(run(), 'pause')).toBeNull();
    expect(whyNotRun(run({ status: 'PAUSE' }), 'pause')).toBe('a run in PAUSE cannot be paused');
    expect(whyNotRun(run({ status: 'PAUSE' }), 'continue')).toBeNull();
    expect(whyNotRun(run(), 'continue')).toBe('only a paused run can be continued');
    expect(whyNotRun(run({ status: 'PAUSE' }), 'cancel')).toBeNull();
    expect(whyNotRun(run({ cancel_requested: true }), 'cancel')).toBe('a cancel is under way');
    expect(whyNotRun(run({ status: 'FINISH', outcome: 'FAIL' }), 'cancel')).toBe(
      'the run has ended',
    );
  });

  it('re-runs a node that ran, skips a pending or failed one (not a for_each)', () => {
    const r = run({ status: 'FINISH', outcome: 'FAIL' });
    expect(whyNotNode(r, node({ status: 'FAILED' }), 'rerun')).toBeNull();
    expect(whyNotNode(r, node({ status: 'SUCCESS' }), 'rerun')).toBeNull();
    expect(whyNotNode(r, node(), 'rerun')).toBe('the node has not run yet');
    expect(whyNotNode(r, node({ status: 'ACTIVE' }), 'rerun')).toBe('the node is under way');
    expect(whyNotNode(r, node({ status: 'FAILED', kind: 'topology' }), 'rerun')).toContain(
      'retried with the run',
    );
    expect(whyNotNode(r, node(), 'skip')).toBeNull();
    expect(whyNotNode(r, node({ status: 'FAILED' }), 'skip')).toBeNull();
    expect(whyNotNode(r, node({ status: 'UPSTREAM_FAILED' }), 'skip')).toBeNull();
    expect(whyNotNode(r, node({ status: 'SUCCESS' }), 'skip')).toContain('upstream-failed');
    expect(whyNotNode(r, node({ status: 'FAILED', items: { total: 3 } }), 'skip')).toContain(
      'for_each',
    );
  });
});

describe('layOut', () => {
  it('places each node below the nodes it depends on, in reading order; ignores unknown ones', () => {
    const { placed, height } = layOut([
      { key: 'join', depends_on: ['left', 'right'] },
      { key: 'left', depends_on: ['top'] },
      { key: 'right', depends_on: ['top', 'nowhere'] },
      { key: 'top', depends_on: [] },
    ]);
    const at = new Map(placed.map((p) => [p.key, p]));
    const y = (k: string): number => at.get(k)?.y ?? NaN;
    expect(y('top')).toBeLessThan(y('left'));
    expect(y('left')).toBe(y('right'));
    expect(y('right')).toBeLessThan(y('join'));
    expect(placed.map((p) => p.key)[0]).toBe('top');
    expect(placed.map((p) => p.key)[3]).toBe('join');
    expect(height).toBeGreaterThan(y('join'));
  });
});

describe('kindLabel', () => {
  it('names what a node does, its phase first', () => {
    expect(kindLabel({ key: 'a', task: { create_info: { task_type: 'demo.echo' } } })).toBe(
      'demo.echo',
    );
    expect(kindLabel({ key: 'g', approval: { timeout_seconds: 60, on_timeout: 'reject' } })).toBe(
      'approval',
    );
    expect(kindLabel({ key: 'w', wait: { seconds: 1 } })).toBe('wait');
    expect(
      kindLabel({ key: 'h', on_failure: true, task: { create_info: { task_type: 'demo.echo' } } }),
    ).toBe('on failure · demo.echo');
    expect(
      kindLabel({ key: 'f', finally: true, task: { create_info: { task_type: 'demo.echo' } } }),
    ).toBe('finally · demo.echo');
  });
});

describe('whyNotNode for approvals', () => {
  it('offers Approve and Reject only on an approval node waiting for a decision', () => {
    const waiting = node({ key: 'g', kind: 'approval', status: 'ACTIVE' });
    expect(whyNotNode(run(), waiting, 'approve')).toBeNull();
    expect(whyNotNode(run(), { ...waiting, status: 'SUCCESS' }, 'reject')).toBe(
      'the approval is not waiting for a decision',
    );
    expect(whyNotNode(run(), node({ kind: 'task', status: 'ACTIVE' }), 'approve')).toBe(
      'only an approval node is approved or rejected',
    );
  });
});
